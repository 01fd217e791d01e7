//go:build linux

package state

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/dynwatch/dynwatch/internal/testos"
)

// BenchmarkRollback is what a commit the file refuses costs on a large file
// (BenchmarkOpen's): each retry while the disk is full or the file at its
// size limit. Without a synced freelist bbolt rebuilds it after every failed
// commit by walking every page the file uses, as an open does; with one, it
// rereads the freelist page. (A change that fails by itself rolls back
// without either.)
func BenchmarkRollback(b *testing.B) {
	path := filepath.Join(b.TempDir(), "state.db")
	buildLarge(b, path)
	for _, mode := range []string{"synced", "rebuilt"} {
		b.Run("freelist="+mode, func(b *testing.B) {
			opts := &bolt.Options{Timeout: time.Second}
			if mode == "rebuilt" {
				opts.NoFreelistSync, opts.FreelistType = true, bolt.FreelistMapType
			}
			db, err := bolt.Open(path, 0o600, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put([]byte("bench"), []byte(mode)) }); err != nil {
				b.Fatal(err)
			}
			lift := testos.LimitFileSize(b, 1) // every write fails
			for b.Loop() {
				if err := db.Update(func(tx *bolt.Tx) error {
					return tx.Bucket(bucketMeta).Put([]byte("bench"), []byte("x"))
				}); err == nil {
					b.Fatal("a commit landed past the file size limit")
				}
			}
			lift()
		})
	}
}

package state

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// BenchmarkOpen is what opening a large state file costs bbolt (100 000
// records and 20 000 undelivered 2 KB deliveries, with the free pages of
// their churn: about 170 MB), by how the file keeps its freelist: synced,
// written by every commit (bbolt's default), or rebuilt at every open by
// walking every page the file uses (NoFreelistSync: what a commit no longer
// writes, an open pays for; a crash changes neither), and rebuilt after
// Open's own walk of the pages (checkPages: a bad page an error, not a panic).
func BenchmarkOpen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "state.db")
	buildLarge(b, path)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"synced", "rebuilt", "rebuilt+checked"} {
		b.Run("freelist="+mode, func(b *testing.B) {
			opts := &bolt.Options{Timeout: time.Second}
			if mode != "synced" {
				opts.NoFreelistSync, opts.FreelistType = true, bolt.FreelistMapType
			}
			// One commit under opts: the file's meta then says whether a
			// freelist is on disk.
			db, err := bolt.Open(path, 0o600, opts)
			if err != nil {
				b.Fatal(err)
			}
			if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put([]byte("bench"), []byte(mode)) }); err != nil {
				b.Fatal(err)
			}
			_ = db.Close()
			for b.Loop() {
				if mode == "rebuilt+checked" {
					if err := checkPages(path); err != nil {
						b.Fatal(err)
					}
				}
				db, err := bolt.Open(path, 0o600, opts)
				if err != nil {
					b.Fatal(err)
				}
				_ = db.Close()
			}
			b.ReportMetric(float64(fi.Size())/1e6, "MB")
		})
	}
}

// buildLarge writes a state file of 100 000 records and 20 000 pending
// deliveries at path, with the churn of a running file (records rewritten,
// deliveries marked done) so that it has free pages.
func buildLarge(b *testing.B, path string) {
	b.Helper()
	s, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	res := Resource{Group: "apps", Resource: "deployments"}
	payload := []byte(`{"id":"u:1:update","data":"` + strings.Repeat("x", 2000) + `"}`)
	for round := range 3 {
		if err := s.Update(func(tx *Tx) error {
			for i := range 100000 {
				if err := tx.Put(res, fmt.Sprint("u-", i), benchRecord(i, round)); err != nil {
					return err
				}
			}
			for i := range 20000 {
				seq, err := tx.Enqueue("out", fmt.Sprint("u-", i), payload)
				if err != nil {
					return err
				}
				if round < 2 {
					if err := tx.Done("out", seq); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}

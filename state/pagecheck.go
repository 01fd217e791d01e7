package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A file without a synced freelist has it rebuilt at every writable open:
// bbolt walks every page the file uses, and a page that does not check (bit
// rot, a torn copy) makes it panic in a goroutine of its own, which crashes
// the process whatever its caller does. checkPages walks the same pages
// first, read-only and in the caller's goroutine, so that such a file is an
// error that says what to do (--reset-state), as any unreadable file is.

// checkPages reads every key and value of the file at path, and returns what
// a bad page made bbolt panic with; bolt.ErrTimeout when another process
// holds the file. A file that does not exist, or that bbolt cannot open (not
// a bbolt file), is left to Open to report.
func checkPages(path string) (err error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	switch {
	case errors.Is(err, bolt.ErrTimeout):
		return err // held by another process: Open says so, without waiting again
	case err != nil:
		return nil
	}
	defer db.Close()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // a page id past the file's end
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("a page does not check: %v", r)
		}
	}()
	return db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error { return walkBucket(b) })
	})
}

// walkBucket reads every key and value of b and of the buckets in it.
func walkBucket(b *bolt.Bucket) error {
	return b.ForEach(func(k, v []byte) error {
		if v != nil {
			return nil
		}
		if nb := b.Bucket(k); nb != nil {
			return walkBucket(nb)
		}
		return nil
	})
}

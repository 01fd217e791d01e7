package state

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Format is the version of the file layout this build reads and writes. In
// format 1 records were kept per resource and namespace scope; format 2 keeps
// them per resource, and a file of format 1 is migrated when it is opened.
const Format = "2"

var (
	bucketMeta     = []byte("meta")
	bucketObjects  = []byte("objects")
	bucketQueues   = []byte("queues")
	bucketBaseline = []byte("baselines")
	keyFormat      = []byte("format")
)

// ErrInUse is returned when another process holds the state file.
var ErrInUse = errors.New("in use by another dynwatch process")

// Store is an open state file. Every transaction is fsynced before it counts
// as committed (bbolt's default): a commit that returned survives an OS crash
// or a power loss, and an fsync that fails fails the commit.
type Store struct {
	db  *bolt.DB
	key DigestKey
}

// Open opens (creating if needed) the state file at path. A file held by another
// process, an unreadable file and a file of another format are errors that say
// what to do.
func Open(path string) (*Store, error) {
	err := checkPages(path)
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, inUse(path)
	} else if err != nil {
		return nil, fmt.Errorf("state file %s is unreadable (%v): start with --reset-state to discard it and start over", path, err)
	}
	db, err := bolt.Open(path, 0o600, boltOptions())
	switch {
	case errors.Is(err, bolt.ErrTimeout):
		return nil, inUse(path)
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("state file %s cannot be created: %w (check that its directory exists and is writable)", path, err)
	case err != nil:
		return nil, fmt.Errorf("state file %s is unreadable (%v): start with --reset-state to discard it and start over", path, err)
	}
	// bbolt applies the mode only to a file it creates: a file made by an
	// earlier build, or copied in, is made private too (it holds the digest key).
	if err := os.Chmod(path, 0o600); err != nil {
		db.Close()
		return nil, fmt.Errorf("state file %s: make it private: %w", path, err)
	}
	var key DigestKey
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		switch f := meta.Get(keyFormat); {
		case f == nil:
			if tx.Bucket(bucketObjects) != nil {
				return errors.New("it has no format marker")
			}
			if err := meta.Put(keyFormat, []byte(Format)); err != nil {
				return err
			}
		case string(f) == "1":
			if err := migrate1(tx); err != nil {
				return fmt.Errorf("migrate from format 1: %w", err)
			}
			if err := meta.Put(keyFormat, []byte(Format)); err != nil {
				return err
			}
		case string(f) != Format:
			return fmt.Errorf("it has format %q and this dynwatch reads %q", f, Format)
		}
		for _, b := range [][]byte{bucketObjects, bucketQueues, bucketBaseline} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		key, err = digestKeyOf(meta)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("state file %s is incompatible: %v: start with --reset-state to discard it and start over", path, err)
	}
	return &Store{db: db, key: key}, nil
}

// Close closes the file; every commit is on disk already.
func (s *Store) Close() error {
	return s.db.Close()
}

// Reset discards the state file at path and reports how many object records and
// pending deliveries it held (-1 when the file could not be read).
func Reset(path string) (records, pending int, err error) {
	records, pending = -1, -1
	if db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true}); err == nil {
		records, pending = 0, 0
		_ = db.View(func(tx *bolt.Tx) error {
			if b := tx.Bucket(bucketObjects); b != nil {
				_ = b.ForEachBucket(func(k []byte) error { records += b.Bucket(k).Stats().KeyN; return nil })
			}
			if b := tx.Bucket(bucketQueues); b != nil {
				_ = b.ForEachBucket(func(k []byte) error { pending += b.Bucket(k).Stats().KeyN; return nil })
			}
			return nil
		})
		db.Close()
	} else if errors.Is(err, bolt.ErrTimeout) {
		return 0, 0, fmt.Errorf("state file %s is %w; stop it before resetting", path, ErrInUse)
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return records, pending, err
	}
	return records, pending, nil
}

// inUse is Open's error for a file another process holds.
func inUse(path string) error {
	return fmt.Errorf("state file %s is %w; stop it first, or give this one its own state.path", path, ErrInUse)
}

// boltOptions are the options a state file is opened with. The freelist (the
// pages a commit may reuse) is not written by every commit but rebuilt at
// open, walking the pages the file uses (30 to 60 ms for a 170 MB file of
// 100 000 records and 20 000 deliveries: BenchmarkOpen), and kept as a map,
// whose allocations do not scan a long list: a commit writes one page fewer.
// An open after a crash costs what any open does: a freelist that is not on
// disk cannot be stale. bbolt of any version reads such a file (one that
// syncs freelists writes it again itself).
func boltOptions() *bolt.Options {
	return &bolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType}
}

// Tx is one atomic change: object records and deliveries together.
type Tx struct {
	tx *bolt.Tx
}

// Update runs f in one transaction.
func (s *Store) Update(f func(*Tx) error) error {
	return s.db.Update(func(tx *bolt.Tx) error { return f(&Tx{tx: tx}) })
}

// View runs f in a read-only transaction.
func (s *Store) View(f func(*Tx) error) error {
	return s.db.View(func(tx *bolt.Tx) error { return f(&Tx{tx: tx}) })
}

// migrate1 merges format 1's record buckets, one per group/resource/namespace,
// into one per group/resource.
func migrate1(tx *bolt.Tx) error {
	objects := tx.Bucket(bucketObjects)
	if objects == nil {
		return nil
	}
	var old [][]byte
	_ = objects.ForEachBucket(func(k []byte) error {
		if bytes.Count(k, []byte("/")) == 2 {
			old = append(old, slices.Clone(k))
		}
		return nil
	})
	for _, k := range old {
		to, err := objects.CreateBucketIfNotExists(k[:bytes.LastIndexByte(k, '/')])
		if err != nil {
			return err
		}
		if err := objects.Bucket(k).ForEach(func(uid, v []byte) error { return to.Put(uid, v) }); err != nil {
			return err
		}
		if err := objects.DeleteBucket(k); err != nil {
			return err
		}
	}
	return nil
}

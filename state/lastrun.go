package state

import (
	"time"

	bolt "go.etcd.io/bbolt"
)

var (
	// keyLastRun is when the file was last written by a running process
	// (every commit, and a clean stop): the end of its shard spec's run.
	keyLastRun = []byte("lastRun")
	// keySpecEnded is keyLastRun as Reshard found it: when the previous
	// shard spec last ran.
	keySpecEnded = []byte("specEnded")
)

// markRun notes now as the file's last run.
func markRun(tx *bolt.Tx) error {
	return tx.Bucket(bucketMeta).Put(keyLastRun, []byte(time.Now().UTC().Format(time.RFC3339Nano)))
}

// MarkStopped notes that the process writing the file stops now (its last
// run ends here, not at its last commit). Only the daemon calls it: a
// command that opens the file while no daemon runs must not move it.
func (s *Store) MarkStopped() error {
	return s.db.Update(markRun)
}

// ReshardedAfter is, after a reshard (see Resharded), when the previous
// shard spec last ran, by this machine's clock: an object created later is
// new to the cluster, not moved in, and fires its add. ok is false when the
// file does not know (a file of an earlier build, or a new file).
func (t *Tx) ReshardedAfter() (at time.Time, ok bool) {
	v := t.tx.Bucket(bucketMeta).Get(keySpecEnded)
	if v == nil {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, string(v))
	return at, err == nil
}

// keepSpecEnd copies the last run to the spec's end, at a reshard.
func keepSpecEnd(meta *bolt.Bucket) error {
	last := meta.Get(keyLastRun)
	if last == nil {
		return meta.Delete(keySpecEnded)
	}
	return meta.Put(keySpecEnded, append([]byte(nil), last...))
}

// LastRun is when the file was last written by a running process (its last
// commit or clean stop); ok is false for a new file (or one of an earlier
// build).
func (s *Store) LastRun() (at time.Time, ok bool) {
	_ = s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyLastRun); v != nil {
			var err error
			at, err = time.Parse(time.RFC3339Nano, string(v))
			ok = err == nil
		}
		return nil
	})
	return at, ok
}

// Forget drops every record and baseline, keeping the queues (what is
// pending is still to be delivered): the next list of each resource is then
// a first start's baseline, as for a new file. It returns how many records
// it dropped.
func (s *Store) Forget() (records int, err error) {
	err = s.db.Update(func(tx *bolt.Tx) error {
		objects := tx.Bucket(bucketObjects)
		_ = objects.ForEachBucket(func(k []byte) error { records += objects.Bucket(k).Stats().KeyN; return nil })
		for _, b := range [][]byte{bucketObjects, bucketBaseline} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		if err := forgetMovedFrom(tx.Bucket(bucketMeta)); err != nil {
			return err
		}
		if err := forgetFirstLists(tx.Bucket(bucketMeta)); err != nil {
			return err
		}
		if err := dropMovedAway(tx); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Delete(keySpecEnded)
	})
	return records, err
}

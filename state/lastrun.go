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

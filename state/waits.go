package state

import (
	"bytes"

	bolt "go.etcd.io/bbolt"

	"github.com/dynwatch/dynwatch/timed"
)

// bucketWaits holds the timed rules' states (timed.State), one per object
// and rule, under the key the watcher gives (its object key and the rule's
// name): what a restart, a reload that keeps the rule or a new leader must
// not restart nor lose. It is made by the first wait, so that a file that
// never had a timed rule is as it was.
var bucketWaits = []byte("waits")

// Wait returns the state kept under key; ok is false when none is (the
// zero state).
func (tx *Tx) Wait(key string) (s timed.State, ok bool, err error) {
	b := tx.tx.Bucket(bucketWaits)
	if b == nil {
		return timed.State{}, false, nil
	}
	v := b.Get([]byte(key))
	if v == nil {
		return timed.State{}, false, nil
	}
	s, err = timed.Unmarshal(v)
	return s, err == nil, err
}

// PutWait keeps s under key, or forgets key when s is the zero state.
func (tx *Tx) PutWait(key string, s timed.State) error {
	if s.IsZero() {
		if b := tx.tx.Bucket(bucketWaits); b != nil {
			return b.Delete([]byte(key))
		}
		return nil
	}
	b, err := tx.tx.CreateBucketIfNotExists(bucketWaits)
	if err != nil {
		return err
	}
	return b.Put([]byte(key), s.Marshal())
}

// ForEachWait calls f with every state kept, in key order; a value that does
// not decode is handed over as the zero state with its error's place taken
// by ok false.
func (tx *Tx) ForEachWait(f func(key string, s timed.State, ok bool) error) error {
	b := tx.tx.Bucket(bucketWaits)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		s, err := timed.Unmarshal(v)
		return f(string(k), s, err == nil)
	})
}

// ForEachWaitUnder is ForEachWait of the keys that begin with prefix.
func (tx *Tx) ForEachWaitUnder(prefix string, f func(key string, s timed.State, ok bool) error) error {
	b := tx.tx.Bucket(bucketWaits)
	if b == nil {
		return nil
	}
	p := []byte(prefix)
	c := b.Cursor()
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		s, err := timed.Unmarshal(v)
		if err := f(string(k), s, err == nil); err != nil {
			return err
		}
	}
	return nil
}

// adoptWaits gives the one cluster's waits the named cluster adopt's keys,
// as its records get (KeepClusters): a wait's key begins with its object's
// key, "group/resource/…", after "CLUSTER:" for a named cluster (a group
// has no ':').
func adoptWaits(tx *bolt.Tx, adopt string) (int, error) {
	b := tx.Bucket(bucketWaits)
	if b == nil {
		return 0, nil
	}
	var keys [][]byte
	err := b.ForEach(func(k, _ []byte) error {
		if slash := bytes.IndexByte(k, '/'); slash >= 0 && bytes.IndexByte(k[:slash], ':') < 0 {
			keys = append(keys, bytes.Clone(k))
		}
		return nil
	})
	for _, k := range keys {
		if err != nil {
			break
		}
		if err = b.Put(append([]byte(adopt+":"), k...), bytes.Clone(b.Get(k))); err == nil {
			err = b.Delete(k)
		}
	}
	return len(keys), err
}

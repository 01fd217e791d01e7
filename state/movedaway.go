package state

import (
	"bytes"
	"strings"

	"github.com/tidwall/gjson"
	bolt "go.etcd.io/bbolt"
)

var (
	// bucketMovedAway holds, after a reshard, the records of objects that
	// are another shard's now, by resource, until the daemon has asked the
	// API server which of them still exist (SettleMovedAway): an object
	// deleted while the set was stopped is this shard's to replay, since no
	// other shard ever had it.
	bucketMovedAway = []byte("movedAway")
	// keyAwayFrom, in bucketMovedAway, is the shard spec they were
	// recorded under.
	keyAwayFrom = []byte("from")
)

// MovedAway is a record set aside at a reshard: an object now another
// shard's.
type MovedAway struct {
	UID, Namespace string
}

// stashMovedAway sets the record v of uid in resource key res aside.
func stashMovedAway(tx *bolt.Tx, from string, res []byte, uid string, v []byte) error {
	away, err := tx.CreateBucketIfNotExists(bucketMovedAway)
	if err != nil {
		return err
	}
	if away.Get(keyAwayFrom) == nil {
		if err := away.Put(keyAwayFrom, []byte(from)); err != nil {
			return err
		}
	}
	b, err := away.CreateBucketIfNotExists(res)
	if err != nil {
		return err
	}
	return b.Put(bytes.Clone([]byte(uid)), bytes.Clone(v))
}

// MovedAway returns the records a reshard set aside, by resource, and the
// shard spec they were recorded under ("" with none, or no shards then).
func (s *Store) MovedAway() (from string, out map[Resource][]MovedAway, err error) {
	out = map[Resource][]MovedAway{}
	err = s.db.View(func(tx *bolt.Tx) error {
		away := tx.Bucket(bucketMovedAway)
		if away == nil {
			return nil
		}
		from = string(away.Get(keyAwayFrom))
		return away.ForEachBucket(func(k []byte) error {
			res, ok := parseResource(string(k))
			if !ok {
				return nil
			}
			return away.Bucket(k).ForEach(func(uid, v []byte) error {
				out[res] = append(out[res], MovedAway{UID: string(uid), Namespace: gjson.GetBytes(v, "ns").Str})
				return nil
			})
		})
	})
	return from, out, err
}

// Namespaces returns the namespace scopes res has a baseline in ("" = all
// namespaces): what its watches list.
func (s *Store) Namespaces(res Resource) []string {
	var out []string
	prefix := res.String() + "/"
	_ = s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketBaseline).ForEach(func(k, _ []byte) error {
			if ns, ok := strings.CutPrefix(string(k), prefix); ok && !strings.Contains(ns, "/") {
				out = append(out, ns)
			}
			return nil
		})
	})
	return out
}

// SettleMovedAway puts back among res's records those set aside whose
// objects are gone (uids): the next list does not see them, and their
// deletes replay; the others' are dropped (their new shard has them).
func (s *Store) SettleMovedAway(res Resource, gone []string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		away := tx.Bucket(bucketMovedAway)
		if away == nil || away.Bucket([]byte(res.String())) == nil {
			return nil
		}
		set := away.Bucket([]byte(res.String()))
		if len(gone) > 0 {
			objects, err := tx.Bucket(bucketObjects).CreateBucketIfNotExists([]byte(res.String()))
			if err != nil {
				return err
			}
			for _, uid := range gone {
				if v := set.Get([]byte(uid)); v != nil {
					if err := objects.Put([]byte(uid), bytes.Clone(v)); err != nil {
						return err
					}
				}
			}
		}
		return away.DeleteBucket([]byte(res.String()))
	})
}

// DropMovedAway drops what a reshard set aside and no SettleMovedAway put
// back: those objects' deletes while the set was stopped do not replay.
func (s *Store) DropMovedAway() error {
	return s.db.Update(dropMovedAway)
}

func dropMovedAway(tx *bolt.Tx) error {
	if tx.Bucket(bucketMovedAway) == nil {
		return nil
	}
	return tx.DeleteBucket(bucketMovedAway)
}

// keyListedAfter, in bucketMovedAway, is the resourceVersion after which a
// new shard's listing counts for the records set aside (SetListedAfter).
var keyListedAfter = []byte("listedAfter")

// ListedAfter returns what SetListedAfter kept for the records set aside;
// ok is false when nothing is (none set aside, or not noted yet).
func (s *Store) ListedAfter() (rv string, ok bool) {
	_ = s.db.View(func(tx *bolt.Tx) error {
		if away := tx.Bucket(bucketMovedAway); away != nil {
			if v := away.Get(keyListedAfter); v != nil {
				rv, ok = string(v), true
			}
		}
		return nil
	})
	return rv, ok
}

// SetListedAfter keeps, with the records set aside, the resourceVersion
// after which a new shard's listing counts for them (the daemon's: its
// Lease's under the spec they were recorded under), so that a process
// killed while it settles them judges the same at its next start. It does
// nothing when no record is set aside.
func (s *Store) SetListedAfter(rv string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		away := tx.Bucket(bucketMovedAway)
		if away == nil {
			return nil
		}
		return away.Put(keyListedAfter, []byte(rv))
	})
}

package state

import (
	"bytes"

	"github.com/tidwall/gjson"
	bolt "go.etcd.io/bbolt"
)

var (
	keyShard = []byte("shard")
	// reshardedBaseline marks a baseline taken under another shard spec:
	// the scope's records are exact for the objects that stayed in the
	// share, and objects new to it have none.
	reshardedBaseline = []byte("resharded")
)

// Resharded is what Reshard did.
type Resharded struct {
	// From and To are the shard specs before and after ("" = everything).
	From, To string
	// Dropped counts the records of objects that are another shard's now.
	Dropped int
}

// Reshard makes the file's records those of shard spec to, whose share owns
// says. The file keeps the spec it was written under; when it differs (a
// changed shards.count, index or by, or shards added or removed), the
// records of objects no longer in the share leave the records, silently
// (their new shard has them: no delete is replayed for an object that only
// moved), set aside until the daemon knows which of them still exist
// (MovedAway, SettleMovedAway: one deleted while the set was stopped
// replays its delete here, the shard that had it),
// and every baseline is marked resharded, so that a listed object without a
// record fires nothing (it is new to the share, not to the cluster: see
// Tx.Resharded). It returns nil when the spec did not change.
func (s *Store) Reshard(to string, owns func(uid, namespace string) bool) (*Resharded, error) {
	var out *Resharded
	err := s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		from := string(meta.Get(keyShard))
		if from == to {
			return nil
		}
		out = &Resharded{From: from, To: to}
		objects := tx.Bucket(bucketObjects)
		err := objects.ForEachBucket(func(k []byte) error {
			b := objects.Bucket(k)
			var stashErr error
			err := dropKeys(b, func(uid string) bool {
				v := b.Get([]byte(uid))
				drop := !owns(uid, gjson.GetBytes(v, "ns").Str)
				if drop {
					out.Dropped++
					if err := stashMovedAway(tx, from, k, uid, v); err != nil && stashErr == nil {
						stashErr = err
					}
				}
				return drop
			})
			if err != nil {
				return err
			}
			return stashErr
		})
		if err != nil {
			return err
		}
		baselines := tx.Bucket(bucketBaseline)
		var keys [][]byte
		_ = baselines.ForEach(func(k, _ []byte) error { keys = append(keys, bytes.Clone(k)); return nil })
		for _, k := range keys {
			if err := baselines.Put(k, reshardedBaseline); err != nil {
				return err
			}
		}
		if err := keepSpecEnd(meta); err != nil {
			return err
		}
		if err := forgetMovedFrom(meta); err != nil {
			return err
		}
		if err := forgetFirstLists(meta); err != nil {
			return err
		}
		if err := meta.Put(keyMovedFromDue, []byte(from)); err != nil {
			return err
		}
		return meta.Put(keyShard, []byte(to))
	})
	return out, err
}

// Resharded reports whether s's baseline was taken under another shard spec
// and s has not been listed in full since: a listed object without a record
// is then new to the share (it moved in), not new to the cluster, and is
// recorded as a baseline. SetBaseline clears it.
func (t *Tx) Resharded(s Scope) bool {
	return bytes.Equal(t.tx.Bucket(bucketBaseline).Get([]byte(s.String())), reshardedBaseline)
}

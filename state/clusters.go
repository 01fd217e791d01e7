package state

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// ClustersKept is what KeepClusters did.
type ClustersKept struct {
	// Adopted counts the one cluster's records that became adopt's.
	Adopted int
	// AdoptedQueued counts the queued deliveries of the one cluster whose
	// ordering key became adopt's.
	AdoptedQueued int
	// Dropped counts the records dropped, of the clusters in DroppedFrom
	// ("" is the one cluster).
	Dropped     int
	DroppedFrom []string
}

// KeepClusters makes the file hold the records and baselines of the
// clusters in keep only ("" is the one cluster, of a config without
// clusters): a cluster renamed or removed from the config, or the one
// cluster once the config has clusters, would otherwise replay stale
// changes when the config names it again. With adopt (a cluster in keep
// that has no records yet), the one cluster's records, baselines and
// timed rules' waits become adopt's instead of being dropped: the same API
// server under a name.
func (s *Store) KeepClusters(keep []string, adopt string) (*ClustersKept, error) {
	out := &ClustersKept{}
	err := s.db.Update(func(tx *bolt.Tx) error {
		objects, baselines := tx.Bucket(bucketObjects), tx.Bucket(bucketBaseline)
		if adopt != "" && (hasCluster(objects, adopt) || hasCluster(baselines, adopt)) {
			adopt = "" // it has its own records: they are the ones kept
		}
		from := map[string]bool{}
		var gone [][]byte
		err := objects.ForEachBucket(func(k []byte) error {
			c := clusterOf(string(k))
			if slices.Contains(keep, c) {
				return nil
			}
			n := objects.Bucket(k).Stats().KeyN
			if c == "" && adopt != "" {
				out.Adopted += n
			} else {
				out.Dropped += n
				from[c] = true
			}
			gone = append(gone, bytes.Clone(k))
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range gone {
			if clusterOf(string(k)) == "" && adopt != "" {
				if err := copyBucket(objects, k, []byte(adopt+":"+string(k))); err != nil {
					return err
				}
			}
			if err := objects.DeleteBucket(k); err != nil {
				return err
			}
		}
		for c := range from {
			out.DroppedFrom = append(out.DroppedFrom, c)
		}
		slices.Sort(out.DroppedFrom)
		if adopt != "" {
			n, err := adoptQueued(tx.Bucket(bucketQueues), adopt)
			if err != nil {
				return err
			}
			out.AdoptedQueued = n
			if _, err := adoptWaits(tx, adopt); err != nil {
				return err
			}
		}
		return keepBaselines(baselines, keep, adopt)
	})
	return out, err
}

// adoptQueued gives the one cluster's queued deliveries, in every action's
// outbox, adopt's ordering key (the key an event of adopt's has): else the
// backlog of an object and its new events would have two keys, and the
// queue, which keeps order per key, would send them side by side.
func adoptQueued(queues *bolt.Bucket, adopt string) (int, error) {
	n := 0
	err := queues.ForEachBucket(func(name []byte) error {
		b := queues.Bucket(name)
		type kv struct{ k, v []byte }
		var moved []kv
		err := b.ForEach(func(k, v []byte) error {
			var p Pending
			if err := json.Unmarshal(v, &p); err != nil {
				return fmt.Errorf("pending delivery %d of %s: %w", binary.BigEndian.Uint64(k), name, err)
			}
			if queuedCluster(p.Key) != "" {
				return nil // a named cluster's already
			}
			moved = append(moved, kv{bytes.Clone(k), pendingJSON(adopt+":"+p.Key, p.JSON)})
			return nil
		})
		if err != nil {
			return err
		}
		for _, e := range moved {
			if err := b.Put(e.k, e.v); err != nil {
				return err
			}
		}
		n += len(moved)
		return nil
	})
	return n, err
}

// queuedCluster is the cluster of a queued delivery's ordering key
// (event.Event.ObjectKey): "" for the one cluster's, group/resource/
// namespace/name, whose name may hold colons (RBAC's system:… names), and
// NAME for NAME:group/…, a cluster's name being a DNS label, without "/".
func queuedCluster(key string) string {
	if c, _, ok := strings.Cut(key, ":"); ok && !strings.Contains(c, "/") {
		return c
	}
	return ""
}

// keepBaselines is KeepClusters for the baselines.
func keepBaselines(b *bolt.Bucket, keep []string, adopt string) error {
	type kv struct{ k, v []byte }
	var gone []kv
	_ = b.ForEach(func(k, v []byte) error {
		if !slices.Contains(keep, clusterOf(string(k))) {
			gone = append(gone, kv{bytes.Clone(k), bytes.Clone(v)})
		}
		return nil
	})
	for _, e := range gone {
		if clusterOf(string(e.k)) == "" && adopt != "" {
			if err := b.Put([]byte(adopt+":"+string(e.k)), e.v); err != nil {
				return err
			}
		}
		if err := b.Delete(e.k); err != nil {
			return err
		}
	}
	return nil
}

// hasCluster reports whether b holds a key of cluster c.
func hasCluster(b *bolt.Bucket, c string) bool {
	k, _ := b.Cursor().Seek([]byte(c + ":"))
	return k != nil && bytes.HasPrefix(k, []byte(c+":"))
}

// copyBucket copies the records of parent's bucket from into a new bucket to.
func copyBucket(parent *bolt.Bucket, from, to []byte) error {
	dst, err := parent.CreateBucketIfNotExists(to)
	if err != nil {
		return err
	}
	return parent.Bucket(from).ForEach(func(k, v []byte) error { return dst.Put(bytes.Clone(k), bytes.Clone(v)) })
}

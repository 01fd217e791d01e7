package state

import (
	"encoding/json"
	"maps"

	bolt "go.etcd.io/bbolt"
)

// keyFirstLists holds, in the meta bucket, the resourceVersion of each
// scope's first list since the file took its shard spec (KeepFirstLists).
var keyFirstLists = []byte("firstLists")

// KeepFirstLists keeps, for each scope of listed (Scope.String →
// resourceVersion) that has none kept since the file took its shard spec
// (Reshard, Forget), the resourceVersion given: that of the scope's first
// list, whose objects the file has held since (or delivered the deletes
// of). It returns what is kept then, for every scope.
func (s *Store) KeepFirstLists(listed map[string]string) (map[string]string, error) {
	var out map[string]string
	err := s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		out = firstLists(meta)
		n := len(out)
		for k, v := range listed {
			if _, ok := out[k]; !ok && v != "" {
				out[k] = v
			}
		}
		if len(out) == n {
			return nil
		}
		b, err := json.Marshal(out)
		if err != nil {
			return err
		}
		return meta.Put(keyFirstLists, b)
	})
	return maps.Clone(out), err
}

func firstLists(meta *bolt.Bucket) map[string]string {
	out := map[string]string{}
	if v := meta.Get(keyFirstLists); v != nil {
		_ = json.Unmarshal(v, &out)
	}
	return out
}

// forgetFirstLists drops the first lists kept, at a reshard (or when the
// file is forgotten): the next lists are the new spec's first.
func forgetFirstLists(meta *bolt.Bucket) error {
	return meta.Delete(keyFirstLists)
}

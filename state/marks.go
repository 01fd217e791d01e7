package state

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	bolt "go.etcd.io/bbolt"
)

// Marks returns, for each scope with a baseline and records, the highest
// resourceVersion its records hold (decimal), by Scope.String(). The
// watches of a scope deliver its events in resourceVersion order and each
// record advances with its event's commit, so, once every scope is listed,
// every change of an object of the scope up to its mark has been recorded
// (or is queued on disk): a later shard that finds the object at a
// resourceVersion no higher knows it has been delivered as it is. A scope
// of a resource whose resourceVersions are not all decimal has none.
func (s *Store) Marks() (map[string]string, error) {
	out := map[string]string{}
	err := s.db.View(func(tx *bolt.Tx) error {
		scopes := map[string][]string{} // resource key → its baselines' namespaces
		_ = tx.Bucket(bucketBaseline).ForEach(func(k, _ []byte) error {
			key := string(k)
			i := strings.LastIndexByte(key, '/')
			if i < 0 {
				return nil
			}
			scopes[key[:i]] = append(scopes[key[:i]], key[i+1:])
			return nil
		})
		objects := tx.Bucket(bucketObjects)
		for res, namespaces := range scopes {
			b := objects.Bucket([]byte(res))
			if b == nil {
				continue
			}
			all, byNS, ok := highest(b)
			if !ok {
				continue
			}
			for _, ns := range namespaces {
				top, has := all, all > 0
				if ns != "" {
					top, has = byNS[ns]
				}
				if has {
					out[res+"/"+ns] = strconv.FormatUint(top, 10)
				}
			}
		}
		return nil
	})
	return out, err
}

// highest is the highest resourceVersion of b's records, in all and by
// namespace; ok is false when one is not decimal.
func highest(b *bolt.Bucket) (all uint64, byNS map[string]uint64, ok bool) {
	byNS = map[string]uint64{}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil {
			continue
		}
		f := gjson.GetManyBytes(v, "rv", "ns")
		rv, err := strconv.ParseUint(f[0].Str, 10, 64)
		if err != nil {
			return 0, nil, false
		}
		all = max(all, rv)
		if ns := f[1].Str; rv > byNS[ns] {
			byNS[ns] = rv
		}
	}
	return all, byNS, true
}

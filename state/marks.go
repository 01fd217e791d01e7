package state

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	bolt "go.etcd.io/bbolt"
)

// Marks returns, for each scope with a baseline and records, the highest
// resourceVersion its records hold (decimal), by Scope.String(). Each record
// advances with its event's commit, so, once every scope is listed,
// an object of the scope found later at a resourceVersion above its mark
// changed after this file recorded it. (Not the converse: a relist after a
// watch gap hands its objects over in list order, so while one is handed
// over a record may stand above a change not recorded yet.) A scope of a
// resource whose resourceVersions are not all decimal has none.
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

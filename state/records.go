package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	bolt "go.etcd.io/bbolt"
)

// Record is what is kept of one object between runs.
type Record struct {
	Namespace       string `json:"ns,omitempty"`
	Name            string `json:"name"`
	ResourceVersion string `json:"rv"`
	// Hash is of the object's content without resourceVersion and managedFields.
	Hash string `json:"hash"`
	// Values holds the value at every path the rules of the resource read.
	Values map[string]json.RawMessage `json:"values,omitempty"`
}

// objects returns the bucket of res's records, nil when there is none.
func (t *Tx) objects(res Resource) *bolt.Bucket {
	return t.tx.Bucket(bucketObjects).Bucket([]byte(res.String()))
}

// Get returns the record of the object uid of res, or nil.
func (t *Tx) Get(res Resource, uid string) (*Record, error) {
	b := t.objects(res)
	if b == nil {
		return nil, nil
	}
	v := b.Get([]byte(uid))
	if v == nil {
		return nil, nil
	}
	var r Record
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("record %s/%s: %w", res, uid, err)
	}
	return &r, nil
}

// Version returns the resourceVersion and content hash recorded for uid,
// without decoding the rest of its record; ok is false if none is.
func (t *Tx) Version(res Resource, uid string) (rv, hash string, ok bool) {
	b := t.objects(res)
	if b == nil {
		return "", "", false
	}
	v := b.Get([]byte(uid))
	if v == nil {
		return "", "", false
	}
	f := gjson.GetManyBytes(v, "rv", "hash")
	return f[0].Str, f[1].Str, true
}

// Put records the object uid of res. A record that is already exactly r is
// not written again (a restart that finds most objects unchanged writes
// nothing for them).
func (t *Tx) Put(res Resource, uid string, r *Record) error {
	b, err := t.tx.Bucket(bucketObjects).CreateBucketIfNotExists([]byte(res.String()))
	if err != nil {
		return err
	}
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if bytes.Equal(b.Get([]byte(uid)), v) {
		return nil
	}
	return b.Put([]byte(uid), v)
}

// Delete forgets the object uid of res.
func (t *Tx) Delete(res Resource, uid string) error {
	b := t.objects(res)
	if b == nil {
		return nil
	}
	return b.Delete([]byte(uid))
}

// ForEach calls f with every record of res.
func (t *Tx) ForEach(res Resource, f func(uid string, r *Record) error) error {
	b := t.objects(res)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		var r Record
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("record %s/%s: %w", res, k, err)
		}
		return f(string(k), &r)
	})
}

// ForEachName calls f with the uid, namespace and name of every record of
// res, reading only those from each record: what a walk over all records
// needs to compare them with a list or a set of namespaces.
func (t *Tx) ForEachName(res Resource, f func(uid, namespace, name string) error) error {
	b := t.objects(res)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		who := gjson.GetManyBytes(v, "ns", "name")
		return f(string(k), who[0].Str, who[1].Str)
	})
}

// Resources returns the resources that hold records.
func (t *Tx) Resources() []Resource {
	var out []Resource
	_ = t.tx.Bucket(bucketObjects).ForEachBucket(func(k []byte) error {
		if r, ok := parseResource(string(k)); ok {
			out = append(out, r)
		}
		return nil
	})
	return out
}

// HasBaseline reports whether s has been recorded once in full.
func (t *Tx) HasBaseline(s Scope) bool {
	return t.tx.Bucket(bucketBaseline).Get([]byte(s.String())) != nil
}

// SetBaseline marks s as recorded in full.
func (t *Tx) SetBaseline(s Scope) error {
	return t.tx.Bucket(bucketBaseline).Put([]byte(s.String()), []byte(time.Now().UTC().Format(time.RFC3339)))
}

// Prune drops what the file keeps of scopes no watch covers any more:
// baselines of scopes not in watched, records of resources not in it and, for
// a resource watched in some namespaces only, records of the other
// namespaces. What is on disk then stays exact however the rules' scopes come
// and go.
func (t *Tx) Prune(watched []Scope) error { return t.prune(watched, func(string) bool { return true }) }

// PruneCluster is Prune for the named cluster only: what the file keeps of
// other clusters stays, whatever watched says.
func (t *Tx) PruneCluster(cluster string, watched []Scope) error {
	return t.prune(watched, func(k string) bool { return clusterOf(k) == cluster })
}

// clusterOf reads the cluster of a key that Resource.String or Scope.String
// wrote ("" for the one cluster).
func clusterOf(k string) string {
	if c, _, ok := strings.Cut(k, ":"); ok {
		return c
	}
	return ""
}

// prune is Prune for the keys that mine says are in its reach.
func (t *Tx) prune(watched []Scope, mine func(k string) bool) error {
	baselines := map[string]bool{}
	nss := map[string]map[string]bool{} // resource key -> namespaces; "" = all
	for _, s := range watched {
		baselines[s.String()] = true
		r := s.Resource.String()
		if nss[r] == nil {
			nss[r] = map[string]bool{}
		}
		nss[r][s.Namespace] = true
	}
	if err := dropKeys(t.tx.Bucket(bucketBaseline), func(k string) bool { return mine(k) && !baselines[k] }); err != nil {
		return err
	}
	objects := t.tx.Bucket(bucketObjects)
	if err := dropKeys(objects, func(k string) bool { return mine(k) && len(nss[k]) == 0 }); err != nil {
		return err
	}
	for k, ns := range nss {
		if b := objects.Bucket([]byte(k)); b != nil && !ns[""] {
			if err := dropKeys(b, func(uid string) bool { return !ns[gjson.GetBytes(b.Get([]byte(uid)), "ns").Str] }); err != nil {
				return err
			}
		}
	}
	return nil
}

// dropKeys deletes the keys of b (records, baselines or, in the objects
// bucket, whole buckets of records) that drop says go.
func dropKeys(b *bolt.Bucket, drop func(k string) bool) error {
	var gone [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if drop(string(k)) {
			gone = append(gone, bytes.Clone(k))
		}
	}
	for _, k := range gone {
		del := b.Delete
		if b.Bucket(k) != nil {
			del = b.DeleteBucket
		}
		if err := del(k); err != nil {
			return err
		}
	}
	return nil
}

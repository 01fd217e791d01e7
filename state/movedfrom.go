package state

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
)

var (
	// keyMovedFrom holds, after a reshard, the previous shard spec and when
	// each of its shards last ran (MovedFrom).
	keyMovedFrom = []byte("movedFrom")
	// keyNewShard marks a file made for a shard new to the set at a reshard:
	// its first watches' scopes are taken as resharded (AdoptNewShard).
	keyNewShard = []byte("newShard")
	// keyMovedFromDue holds, from a reshard until SetMovedFrom, the spec
	// the file was written under before it: a process killed in between
	// (while it lists its old share, say) keeps the Leases' ends at its
	// next start (MovedFromDue).
	keyMovedFromDue = []byte("movedFromDue")
)

// MovedFromDue returns the spec before the last reshard when SetMovedFrom
// has not kept what the Leases say of it since; ok is false otherwise.
func (s *Store) MovedFromDue() (from string, ok bool) {
	_ = s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyMovedFromDue); v != nil {
			from, ok = string(v), true
		}
		return nil
	})
	return from, ok
}

// MovedFrom is what a shard knows, after a reshard, of the shard spec before
// it: an object of its share without a record moved in from its shard under
// that spec (its old owner), and is compared with when that shard last ran.
type MovedFrom struct {
	// Count and ByNamespace are the previous spec's (Count 1: no shards).
	Count       int  `json:"count"`
	ByNamespace bool `json:"byNamespace,omitempty"`
	// Ends are when each shard of the previous spec last ran, by index, in
	// Unix seconds (the Leases' times); an index missing is not known (the
	// file's own end, Tx.ReshardedAfter, stands for it).
	Ends map[string]int64 `json:"ends,omitempty"`
	// Marks are, by index, the marks (Store.Marks) each shard of the
	// previous spec last published, by scope; an index missing is not
	// known (its objects are then compared with its end).
	Marks map[string]map[string]string `json:"marks,omitempty"`
}

// SetMarks notes the marks the previous spec's shard index published.
func (m *MovedFrom) SetMarks(index int, marks map[string]string) {
	if m.Marks == nil {
		m.Marks = map[string]map[string]string{}
	}
	m.Marks[strconv.Itoa(index)] = marks
}

// Mark is the previous spec's shard index's mark for an object of res in
// namespace ns: that of its scope of res that covers ns (all namespaces, or
// ns). ok is false when it published none for them.
func (m MovedFrom) Mark(index int, res Resource, ns string) (rv uint64, ok bool) {
	marks, ok := m.Marks[strconv.Itoa(index)]
	if !ok {
		return 0, false
	}
	for _, s := range []Scope{res.In(""), res.In(ns)} {
		if v, err := strconv.ParseUint(marks[s.String()], 10, 64); err == nil {
			return v, true
		}
	}
	return 0, false
}

// End is when the previous spec's shard index last ran; ok is false when it
// is not known.
func (m MovedFrom) End(index int) (at time.Time, ok bool) {
	s, ok := m.Ends[strconv.Itoa(index)]
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(s, 0), true
}

// SetEnd notes when the previous spec's shard index last ran.
func (m *MovedFrom) SetEnd(index int, at time.Time) {
	if m.Ends == nil {
		m.Ends = map[string]int64{}
	}
	m.Ends[strconv.Itoa(index)] = at.Unix()
}

// SetMovedFrom keeps what the file's shard knows of the previous spec, once
// at a reshard (Reshard drops what an earlier one kept). newShard marks a
// file made for a shard new to the set: the scopes of its first watches are
// then resharded scopes, not first starts (AdoptNewShard). With clusters,
// the mark holds for the first watches of each of clusters (their names),
// each cluster's source starting its own.
func (s *Store) SetMovedFrom(m MovedFrom, newShard bool, clusters ...string) error {
	v, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode the previous shard spec: %w", err)
	}
	mark := []byte("1")
	if len(clusters) > 0 {
		if mark, err = json.Marshal(clusters); err != nil {
			return fmt.Errorf("encode the clusters of a new shard: %w", err)
		}
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if newShard {
			if err := meta.Put(keyNewShard, mark); err != nil {
				return err
			}
		}
		if err := meta.Delete(keyMovedFromDue); err != nil {
			return err
		}
		return meta.Put(keyMovedFrom, v)
	})
}

// MovedFrom returns what SetMovedFrom kept; ok is false when nothing is kept
// (no reshard, or one without leader election).
func (t *Tx) MovedFrom() (m MovedFrom, ok bool) {
	v := t.tx.Bucket(bucketMeta).Get(keyMovedFrom)
	if v == nil || json.Unmarshal(v, &m) != nil || m.Count < 1 {
		return MovedFrom{}, false
	}
	return m, true
}

// NewShard reports whether SetMovedFrom marked the file as a new shard's
// and AdoptNewShard has not run since.
func (t *Tx) NewShard() bool { return t.tx.Bucket(bucketMeta).Get(keyNewShard) != nil }

// AdoptNewShard takes, in a file SetMovedFrom marked as a new shard's, each
// of scopes without a baseline as a resharded one (its objects moved in:
// compared with their old owners' ends, not a first start's baseline) and
// drops the mark, so that a scope watched later is a first start again. It
// reports whether the file had the mark.
func (t *Tx) AdoptNewShard(scopes []Scope) (bool, error) {
	meta := t.tx.Bucket(bucketMeta)
	mark := meta.Get(keyNewShard)
	if mark == nil {
		return false, nil
	}
	rest, ours := pendingClusters(mark, scopes)
	if !ours {
		return false, nil
	}
	baselines := t.tx.Bucket(bucketBaseline)
	for _, s := range scopes {
		if baselines.Get([]byte(s.String())) != nil {
			continue
		}
		if err := baselines.Put([]byte(s.String()), reshardedBaseline); err != nil {
			return false, err
		}
	}
	if rest != nil {
		return true, meta.Put(keyNewShard, rest)
	}
	return true, meta.Delete(keyNewShard)
}

// pendingClusters reads a new shard's mark: "1" holds for the first
// watches, whichever cluster; a list of clusters for the first watches of
// each. ours reports whether it holds for scopes (one source's, one
// cluster's), rest the mark to keep once they are adopted (nil: none).
func pendingClusters(mark []byte, scopes []Scope) (rest []byte, ours bool) {
	var pending []string
	if string(mark) == "1" || json.Unmarshal(mark, &pending) != nil {
		return nil, true
	}
	if len(scopes) == 0 {
		return nil, false
	}
	i := slices.Index(pending, scopes[0].Cluster)
	if i < 0 {
		return nil, false
	}
	if pending = slices.Delete(pending, i, i+1); len(pending) == 0 {
		return nil, true
	}
	rest, _ = json.Marshal(pending)
	return rest, true
}

// forgetMovedFrom drops what an earlier reshard kept, at a new one (or when
// the file's records are forgotten).
func forgetMovedFrom(meta *bolt.Bucket) error {
	for _, k := range [][]byte{keyNewShard, keyMovedFromDue} {
		if err := meta.Delete(k); err != nil {
			return err
		}
	}
	return meta.Delete(keyMovedFrom)
}

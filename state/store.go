// Package state is dynwatch's restart state: per watched resource, what it last
// saw of each object (enough to tell what changed while it was down and to
// evaluate `changed` and `object: old` on it), and the durable action queues.
// It lives in one bbolt file; an object's record advances in the same
// transaction as the events it produced.
//
// It knows nothing of rules or the watcher: it imports no dynwatch package but
// fieldpath and event.
package state

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"slices"
	"time"
	"unicode"

	"github.com/tidwall/gjson"
	bolt "go.etcd.io/bbolt"

	"github.com/dynwatch/dynwatch/event"
)

// Format is the version of the file layout this build reads and writes. In
// format 1 records were kept per resource and namespace scope; format 2 keeps
// them per resource, and a file of format 1 is migrated when it is opened.
const Format = "2"

var (
	bucketMeta     = []byte("meta")
	bucketObjects  = []byte("objects")
	bucketQueues   = []byte("queues")
	bucketBaseline = []byte("baselines")
	keyFormat      = []byte("format")
)

// ErrInUse is returned when another process holds the state file.
var ErrInUse = errors.New("in use by another dynwatch process")

// Store is an open state file. Every transaction is fsynced before it counts
// as committed (bbolt's default): a commit that returned survives an OS crash
// or a power loss, and an fsync that fails fails the commit.
type Store struct {
	db  *bolt.DB
	key event.DigestKey
}

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

// Pending is a delivery that was accepted and not yet delivered.
type Pending struct {
	Seq  uint64          `json:"-"`
	Key  string          `json:"key"`
	JSON json.RawMessage `json:"payload"`
}

// Open opens (creating if needed) the state file at path. A file held by another
// process, an unreadable file and a file of another format are errors that say
// what to do.
func Open(path string) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	switch {
	case errors.Is(err, bolt.ErrTimeout):
		return nil, fmt.Errorf("state file %s is %w; stop it first, or give this one its own state.path", path, ErrInUse)
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("state file %s cannot be created: %w (check that its directory exists and is writable)", path, err)
	case err != nil:
		return nil, fmt.Errorf("state file %s is unreadable (%v): start with --reset-state to discard it and start over", path, err)
	}
	// bbolt applies the mode only to a file it creates: a file made by an
	// earlier build, or copied in, is made private too (it holds the digest key).
	if err := os.Chmod(path, 0o600); err != nil {
		db.Close()
		return nil, fmt.Errorf("state file %s: make it private: %w", path, err)
	}
	var key event.DigestKey
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		switch f := meta.Get(keyFormat); {
		case f == nil:
			if tx.Bucket(bucketObjects) != nil {
				return errors.New("it has no format marker")
			}
			if err := meta.Put(keyFormat, []byte(Format)); err != nil {
				return err
			}
		case string(f) == "1":
			if err := migrate1(tx); err != nil {
				return fmt.Errorf("migrate from format 1: %w", err)
			}
			if err := meta.Put(keyFormat, []byte(Format)); err != nil {
				return err
			}
		case string(f) != Format:
			return fmt.Errorf("it has format %q and this dynwatch reads %q", f, Format)
		}
		for _, b := range [][]byte{bucketObjects, bucketQueues, bucketBaseline} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		key, err = digestKeyOf(meta)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("state file %s is incompatible: %v: start with --reset-state to discard it and start over", path, err)
	}
	return &Store{db: db, key: key}, nil
}

// Close closes the file; every commit is on disk already.
func (s *Store) Close() error {
	return s.db.Close()
}

// Reset discards the state file at path and reports how many object records and
// pending deliveries it held (-1 when the file could not be read).
func Reset(path string) (records, pending int, err error) {
	records, pending = -1, -1
	if db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true}); err == nil {
		records, pending = 0, 0
		_ = db.View(func(tx *bolt.Tx) error {
			if b := tx.Bucket(bucketObjects); b != nil {
				_ = b.ForEachBucket(func(k []byte) error { records += b.Bucket(k).Stats().KeyN; return nil })
			}
			if b := tx.Bucket(bucketQueues); b != nil {
				_ = b.ForEachBucket(func(k []byte) error { pending += b.Bucket(k).Stats().KeyN; return nil })
			}
			return nil
		})
		db.Close()
	} else if errors.Is(err, bolt.ErrTimeout) {
		return 0, 0, fmt.Errorf("state file %s is %w; stop it before resetting", path, ErrInUse)
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return records, pending, err
	}
	return records, pending, nil
}

// Tx is one atomic change: object records and deliveries together.
type Tx struct {
	tx *bolt.Tx
}

// Update runs f in one transaction.
func (s *Store) Update(f func(*Tx) error) error {
	return s.db.Update(func(tx *bolt.Tx) error { return f(&Tx{tx: tx}) })
}

// View runs f in a read-only transaction.
func (s *Store) View(f func(*Tx) error) error {
	return s.db.View(func(tx *bolt.Tx) error { return f(&Tx{tx: tx}) })
}

// migrate1 merges format 1's record buckets, one per group/resource/namespace,
// into one per group/resource.
func migrate1(tx *bolt.Tx) error {
	objects := tx.Bucket(bucketObjects)
	if objects == nil {
		return nil
	}
	var old [][]byte
	_ = objects.ForEachBucket(func(k []byte) error {
		if bytes.Count(k, []byte("/")) == 2 {
			old = append(old, slices.Clone(k))
		}
		return nil
	})
	for _, k := range old {
		to, err := objects.CreateBucketIfNotExists(k[:bytes.LastIndexByte(k, '/')])
		if err != nil {
			return err
		}
		if err := objects.Bucket(k).ForEach(func(uid, v []byte) error { return to.Put(uid, v) }); err != nil {
			return err
		}
		if err := objects.DeleteBucket(k); err != nil {
			return err
		}
	}
	return nil
}

// objects returns the bucket of scope's records, nil when there is none.
func (t *Tx) objects(scope string) *bolt.Bucket {
	return t.tx.Bucket(bucketObjects).Bucket([]byte(scope))
}

// createObjects returns the bucket of scope's records, made if need be.
func (t *Tx) createObjects(scope string) (*bolt.Bucket, error) {
	return t.tx.Bucket(bucketObjects).CreateBucketIfNotExists([]byte(scope))
}

// Get returns the record of the object uid of scope, or nil.
func (t *Tx) Get(scope, uid string) (*Record, error) {
	b := t.objects(scope)
	if b == nil {
		return nil, nil
	}
	v := b.Get([]byte(uid))
	if v == nil {
		return nil, nil
	}
	var r Record
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("record %s/%s: %w", scope, uid, err)
	}
	return &r, nil
}

// Version returns the resourceVersion and content hash recorded for uid,
// without decoding the rest of its record; ok is false if none is.
func (t *Tx) Version(scope, uid string) (rv, hash string, ok bool) {
	b := t.objects(scope)
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

// Put records the object uid of scope. A record that is already exactly r is
// not written again (a restart that finds most objects unchanged writes
// nothing for them).
func (t *Tx) Put(scope, uid string, r *Record) error {
	b, err := t.createObjects(scope)
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

// Delete forgets the object uid of scope.
func (t *Tx) Delete(scope, uid string) error {
	b := t.objects(scope)
	if b == nil {
		return nil
	}
	return b.Delete([]byte(uid))
}

// ForEach calls f with every record of scope.
func (t *Tx) ForEach(scope string, f func(uid string, r *Record) error) error {
	b := t.objects(scope)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		var r Record
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("record %s/%s: %w", scope, k, err)
		}
		return f(string(k), &r)
	})
}

// ForEachName calls f with the uid, namespace and name of every record of
// scope, reading only those from each record: what a walk over all records
// needs to compare them with a list or a set of namespaces.
func (t *Tx) ForEachName(scope string, f func(uid, namespace, name string) error) error {
	b := t.objects(scope)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		who := gjson.GetManyBytes(v, "ns", "name")
		return f(string(k), who[0].Str, who[1].Str)
	})
}

// HasBaseline reports whether scope has been recorded once in full.
func (t *Tx) HasBaseline(scope string) bool {
	return t.tx.Bucket(bucketBaseline).Get([]byte(scope)) != nil
}

// Baselines returns the scopes that have a baseline.
func (t *Tx) Baselines() []string {
	var out []string
	_ = t.tx.Bucket(bucketBaseline).ForEach(func(k, _ []byte) error {
		out = append(out, string(k))
		return nil
	})
	return out
}

// DropBaseline forgets that scope was recorded in full.
func (t *Tx) DropBaseline(scope string) error {
	return t.tx.Bucket(bucketBaseline).Delete([]byte(scope))
}

// Scopes returns the scopes that hold records.
func (t *Tx) Scopes() []string {
	var out []string
	_ = t.tx.Bucket(bucketObjects).ForEachBucket(func(k []byte) error {
		out = append(out, string(k))
		return nil
	})
	return out
}

// DropScope forgets every record of scope.
func (t *Tx) DropScope(scope string) error {
	err := t.tx.Bucket(bucketObjects).DeleteBucket([]byte(scope))
	if errors.Is(err, bolt.ErrBucketNotFound) {
		return nil
	}
	return err
}

// SetBaseline marks scope as recorded in full.
func (t *Tx) SetBaseline(scope string) error {
	return t.tx.Bucket(bucketBaseline).Put([]byte(scope), []byte(time.Now().UTC().Format(time.RFC3339)))
}

// Enqueue appends a delivery to action's durable queue and returns its sequence
// number, which orders it after every earlier one.
func (t *Tx) Enqueue(action, key string, payload []byte) (uint64, error) {
	b, err := t.tx.Bucket(bucketQueues).CreateBucketIfNotExists([]byte(action))
	if err != nil {
		return 0, err
	}
	seq, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	return seq, b.Put(seqKey(seq), pendingJSON(key, payload))
}

// pendingJSON is json.Marshal(Pending{Key: key, JSON: payload}) for a payload
// that is compact JSON already (payload.Delivery's): appended as it is, not
// scanned again.
func pendingJSON(key string, payload []byte) []byte {
	k, _ := json.Marshal(key) // a string always encodes
	v := make([]byte, 0, len(k)+len(payload)+20)
	v = append(append(append(v, `{"key":`...), k...), `,"payload":`...)
	return append(append(v, payload...), '}')
}

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// Done removes delivered (or given up) deliveries from action's queue.
func (s *Store) Done(action string, seqs ...uint64) error {
	return s.Update(func(tx *Tx) error { return tx.Done(action, seqs...) })
}

// Done removes delivered (or given up) deliveries from action's queue.
func (t *Tx) Done(action string, seqs ...uint64) error {
	b := t.tx.Bucket(bucketQueues).Bucket([]byte(action))
	if b == nil {
		return nil
	}
	for _, seq := range seqs {
		if err := b.Delete(seqKey(seq)); err != nil {
			return err
		}
	}
	return nil
}

// PendingAfter returns up to limit of action's undelivered deliveries whose
// sequence number is above after, in order.
func (s *Store) PendingAfter(action string, after uint64, limit int) ([]Pending, error) {
	var out []Pending
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketQueues).Bucket([]byte(action))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(seqKey(after + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			var p Pending
			if err := json.Unmarshal(v, &p); err != nil {
				return fmt.Errorf("pending delivery %d of %s: %w", binary.BigEndian.Uint64(k), action, err)
			}
			p.Seq = binary.BigEndian.Uint64(k)
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// PendingActions returns the actions that have undelivered deliveries, and how many.
func (s *Store) PendingActions() (map[string]int, error) {
	out := map[string]int{}
	err := s.db.View(func(tx *bolt.Tx) error {
		q := tx.Bucket(bucketQueues)
		return q.ForEachBucket(func(name []byte) error {
			if n := q.Bucket(name).Stats().KeyN; n > 0 {
				out[string(name)] = n
			}
			return nil
		})
	})
	return out, err
}

// Hash hashes an object's JSON without metadata.resourceVersion, so that an
// object that only got a new version (an etcd restore, a no-op write) does not
// count as changed. Objects reach it as the API server encodes them, with
// managedFields cut out: a server encodes equal content equally (built-in
// kinds in their fields' order, custom resources with sorted keys), so equal
// content hashes equally; the version is cut out of the bytes rather than
// decoded and encoded again. It trusts obj to be JSON, and checks only that it
// is an object: validating every byte would double its cost. The hash is an
// HMAC under the file's key (Store.DigestKey), as it is of a Secret's data too.
func Hash(key event.DigestKey, obj []byte) (string, error) {
	return hashWith(hmac.New(sha256.New, key), obj)
}

func hashWith(h hash.Hash, obj []byte) (string, error) {
	if i := bytes.IndexFunc(obj, func(r rune) bool { return !unicode.IsSpace(r) }); i < 0 || obj[i] != '{' {
		return "", errors.New("hash: not a JSON object")
	}
	if rv := gjson.GetBytes(obj, "metadata.resourceVersion"); rv.Index > 0 {
		h.Write(obj[:rv.Index])
		h.Write(obj[rv.Index+len(rv.Raw):])
	} else {
		h.Write(obj)
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

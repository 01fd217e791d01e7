package state

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"maps"
	"unicode"

	"github.com/tidwall/gjson"
	bolt "go.etcd.io/bbolt"
)

// digestField marks a recorded value that is a keyed digest of the real one:
// what restart state keeps of a redacted value, enough to tell that it
// changed. legacyDigestField marked the unkeyed SHA-256 that files written
// before kept; such a value still compares, and is replaced by a keyed one
// when its record is next written.
const (
	digestField       = "$dynwatchHMAC"
	legacyDigestField = "$dynwatchSHA256"
)

// DigestKey is the random key of one state file's digests: an HMAC, so that
// the file's digests cannot be matched against a dictionary of likely values
// without the key.
type DigestKey []byte

// Digest returns the recorded form of a value that must not be kept in clear:
// {"$dynwatchHMAC": "<hex of HMAC-SHA256 of its raw JSON under k>"}.
func (k DigestKey) Digest(raw string) json.RawMessage {
	m := hmac.New(sha256.New, k)
	m.Write([]byte(raw))
	return json.RawMessage(`{"` + digestField + `":"` + hex.EncodeToString(m.Sum(nil)) + `"}`)
}

// IsDigest reports whether a recorded value is a digest (keyed, or unkeyed as
// an older dynwatch kept them) rather than the value in clear.
func IsDigest(recorded json.RawMessage) bool {
	return gjson.GetBytes(recorded, gjson.Escape(digestField)).Exists() ||
		gjson.GetBytes(recorded, gjson.Escape(legacyDigestField)).Exists()
}

// Same reports whether a recorded value (raw JSON or a Digest under k; nil:
// the path was missing) stands for the current raw JSON value ("" when
// missing).
func (k DigestKey) Same(recorded json.RawMessage, raw string) bool {
	switch {
	case recorded == nil || raw == "":
		return recorded == nil && raw == ""
	case gjson.GetBytes(recorded, gjson.Escape(digestField)).Exists():
		return hmac.Equal(recorded, k.Digest(raw))
	case gjson.GetBytes(recorded, gjson.Escape(legacyDigestField)).Exists():
		sum := sha256.Sum256([]byte(raw))
		return string(recorded) == `{"`+legacyDigestField+`":"`+hex.EncodeToString(sum[:])+`"}`
	}
	return string(recorded) == raw
}

// Recorded is the old state of a replayed update as its record knew it: the
// values at the recorded paths (Record.Values), digests under Key among them.
// It is the event's event.Recorded.
type Recorded struct {
	Values map[string]json.RawMessage
	Key    DigestKey
}

// Same reports whether the value recorded at path stands for raw, the current
// raw JSON value there ("" when missing).
func (r Recorded) Same(path, raw string) bool { return r.Key.Same(r.Values[path], raw) }

// Paths returns the recorded paths, in no order.
func (r Recorded) Paths() []string {
	out := make([]string, 0, len(r.Values))
	for p := range maps.Keys(r.Values) {
		out = append(out, p)
	}
	return out
}

// keyDigest names, in the meta bucket, the file's random digest key: the HMAC
// key of its digests of redacted values and of its content hashes. It is made
// with the file, so a reset (a new file) makes a new one.
var keyDigest = []byte("digestKey")

// digestKeyOf returns the file's digest key, making it when the file has none
// (new, or written by a dynwatch that kept unkeyed digests).
func digestKeyOf(meta *bolt.Bucket) (DigestKey, error) {
	if k := meta.Get(keyDigest); len(k) == 32 {
		return bytes.Clone(k), nil
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	return k, meta.Put(keyDigest, k)
}

// DigestKey returns the key of the file's digests, which events replayed from
// its records carry (in their Recorded) and Values and Hash are given.
func (s *Store) DigestKey() DigestKey { return s.key }

// Hash hashes an object's JSON without metadata.resourceVersion, so that an
// object that only got a new version (an etcd restore, a no-op write) does not
// count as changed. Objects reach it as the API server encodes them, with
// managedFields cut out: a server encodes equal content equally (built-in
// kinds in their fields' order, custom resources with sorted keys), so equal
// content hashes equally; the version is cut out of the bytes rather than
// decoded and encoded again. It trusts obj to be JSON, and checks only that it
// is an object: validating every byte would double its cost. The hash is an
// HMAC under the file's key (Store.DigestKey), as it is of a Secret's data too.
func Hash(key DigestKey, obj []byte) (string, error) {
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

// SameContent reports whether obj hashes to a record's content hash: under
// key, or, for a record that a dynwatch before keyed hashes wrote and that
// was not written again since, as it hashed then (unkeyed SHA-256), so that
// an upgrade does not take every object that only got a new version for a
// changed one.
func SameContent(key DigestKey, obj []byte, recorded string) bool {
	if h, err := Hash(key, obj); err != nil || h == recorded {
		return err == nil
	}
	h, err := hashWith(sha256.New(), obj)
	return err == nil && h == recorded
}

package state

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"

	bolt "go.etcd.io/bbolt"

	"github.com/dynwatch/dynwatch/event"
)

// keyDigest names, in the meta bucket, the file's random digest key: the HMAC
// key of its digests of redacted values and of its content hashes. It is made
// with the file, so a reset (a new file) makes a new one.
var keyDigest = []byte("digestKey")

// digestKeyOf returns the file's digest key, making it when the file has none
// (new, or written by a dynwatch that kept unkeyed digests).
func digestKeyOf(meta *bolt.Bucket) (event.DigestKey, error) {
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
// its records carry (event.Event.DigestKey) and Values and Hash are given.
func (s *Store) DigestKey() event.DigestKey { return s.key }

// SameContent reports whether obj hashes to a record's content hash: under
// key, or, for a record that a dynwatch before keyed hashes wrote and that
// was not written again since, as it hashed then (unkeyed SHA-256), so that
// an upgrade does not take every object that only got a new version for a
// changed one.
func SameContent(key event.DigestKey, obj []byte, recorded string) bool {
	if h, err := Hash(key, obj); err != nil || h == recorded {
		return err == nil
	}
	h, err := hashWith(sha256.New(), obj)
	return err == nil && h == recorded
}

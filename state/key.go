package state

import (
	"bytes"
	"crypto/rand"

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

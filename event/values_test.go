package event

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
)

// A digest is an HMAC under the file's key; a digest an older dynwatch
// recorded (plain SHA-256) still compares, so an upgrade replays no change
// that did not happen.
func TestDigestIsKeyed(t *testing.T) {
	t.Parallel()
	const raw = `"aHVudGVyMg=="`
	a, b := DigestKey("key one"), DigestKey("key two")
	if string(a.Digest(raw)) == string(b.Digest(raw)) {
		t.Error("digests under two keys are equal")
	}
	sum := sha256.Sum256([]byte(raw))
	if string(a.Digest(raw)) == `{"$dynwatchHMAC":"`+hex.EncodeToString(sum[:])+`"}` {
		t.Error("the digest is the plain SHA-256")
	}
	legacy := json.RawMessage(`{"$dynwatchSHA256":"` + hex.EncodeToString(sum[:]) + `"}`)
	for _, c := range []struct {
		name     string
		recorded json.RawMessage
		raw      string
		want     bool
	}{
		{"own digest", a.Digest(raw), raw, true},
		{"own digest, new value", a.Digest(raw), `"b3RoZXI="`, false},
		{"another key's digest", b.Digest(raw), raw, false},
		{"legacy digest", legacy, raw, true},
		{"legacy digest, new value", legacy, `"b3RoZXI="`, false},
		{"clear value", json.RawMessage(`3`), `3`, true},
		{"missing both", nil, "", true},
		{"missing now", a.Digest(raw), "", false},
	} {
		if got := a.Same(c.recorded, c.raw); got != c.want {
			t.Errorf("%s: Same = %v, want %v", c.name, got, c.want)
		}
	}
}

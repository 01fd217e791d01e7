package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A state file gets a random digest key when it is made and keeps it across
// opens; a reset makes a new one. Digests and content hashes are keyed: two
// files' digests of one value differ, so neither a dictionary made in advance
// nor another file's digests match them.
func TestDigestKeyIsTheFiles(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	open := func() DigestKey {
		t.Helper()
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		return s.DigestKey()
	}
	first := open()
	if len(first) != 32 || bytes.Equal(first, make([]byte, 32)) {
		t.Fatalf("key %x", first)
	}
	if again := open(); !bytes.Equal(again, first) {
		t.Errorf("reopened: key %x, want %x", again, first)
	}
	raw, _ := os.ReadFile(path)
	if !bytes.Contains(raw, first) {
		t.Error("the key is not in the file")
	}
	if _, _, err := Reset(path); err != nil {
		t.Fatal(err)
	}
	reset := open()
	if bytes.Equal(reset, first) {
		t.Error("a reset kept the key")
	}

	const password = `"aHVudGVyMg=="` // "hunter2", base64, as JSON
	a := Values(first, []byte(`{"data":{"password":`+password+`}}`), []string{"data.password"}, func(string) bool { return true })
	b := Values(reset, []byte(`{"data":{"password":`+password+`}}`), []string{"data.password"}, func(string) bool { return true })
	if string(a["data.password"]) == string(b["data.password"]) || strings.Contains(string(a["data.password"]), "aHVudGVyMg") {
		t.Errorf("digests %s and %s", a["data.password"], b["data.password"])
	}
	if !first.Same(a["data.password"], password) || reset.Same(a["data.password"], password) || first.Same(a["data.password"], `"b3RoZXI="`) {
		t.Error("a digest compares only under its key and with its value")
	}
	obj := []byte(`{"metadata":{"name":"s","resourceVersion":"1"},"data":{"password":` + password + `}}`)
	h1, _ := Hash(first, obj)
	h2, _ := Hash(reset, obj)
	if h1 == h2 {
		t.Error("content hashes are not keyed")
	}
}

// A state file is private whoever made it: it holds the digest key, so a
// file an earlier build or a copy left world-readable is made 0600 at open.
func TestOpenMakesTheFilePrivate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("state file mode %o after open, want 600", got)
	}
}

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

func TestHashIgnoresVersion(t *testing.T) {
	a, _ := Hash(nil, []byte(`{"metadata":{"name":"a","resourceVersion":"1"},"spec":{"x":1}}`))
	b, _ := Hash(nil, []byte(`{"metadata":{"name":"a","resourceVersion":"22"},"spec":{"x":1}}`))
	c, _ := Hash(nil, []byte(`{"metadata":{"name":"a","resourceVersion":"2"},"spec":{"x":2}}`))
	if a != b || a == c {
		t.Errorf("hashes %s %s %s", a, b, c)
	}
	// Hash trusts its input to be JSON (the API server's, through the
	// informer): it checks only that it is an object, not every byte.
	for _, bad := range []string{``, ` `, `[1]`, `"x"`} {
		if _, err := Hash(nil, []byte(bad)); err == nil {
			t.Errorf("hashed %q", bad)
		}
	}
}

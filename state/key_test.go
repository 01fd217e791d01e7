package state

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynwatch/dynwatch/event"
)

// A state file gets a random digest key when it is made and keeps it across
// opens; a reset makes a new one. Digests and content hashes are keyed: two
// files' digests of one value differ, so neither a dictionary made in advance
// nor another file's digests match them.
func TestDigestKeyIsTheFiles(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	open := func() event.DigestKey {
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

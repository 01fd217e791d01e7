package state

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A state file with a bad page (bit rot, a torn copy) makes Open return an
// error that says what to do, as any unreadable file does, or open: it does
// not crash the process. Without a synced freelist, bbolt rebuilds it at the
// first write by walking every page and panics, in a goroutine of its own
// that no caller can recover, at a page that does not check. (Run in a child
// process, so that the panic fails this test and not the package.)
func TestOpenABadPageIsAnErrorNotAPanic(t *testing.T) {
	if path := os.Getenv("DYNWATCH_TEST_BADPAGE"); path != "" {
		s, err := Open(path)
		if err == nil {
			s.Close()
		}
		fmt.Printf("open: %v\n", err)
		return
	}
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s, 0, 2000, 200)
	leaf := 0
	if err := s.db.View(func(tx *bolt.Tx) error {
		for id := 3; id < 10000; id++ {
			if p, err := tx.Page(id); err == nil && p != nil && p.Type == "leaf" && p.Count > 10 {
				leaf = id
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	pageSize := s.db.Info().PageSize
	s.Close()
	if leaf == 0 {
		t.Fatal("no leaf page found")
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	var id [8]byte // the page's header names another page
	binary.LittleEndian.PutUint64(id[:], uint64(leaf)+7)
	if _, err := f.WriteAt(id[:], int64(leaf*pageSize)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenABadPageIsAnErrorNotAPanic$")
	cmd.Env = append(os.Environ(), "DYNWATCH_TEST_BADPAGE="+path)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "panic:") {
		first, _, _ := strings.Cut(string(out), "\n\n")
		t.Fatalf("Open of a file with a bad page crashed the process (%v):\n%s", err, first)
	}
	if o := string(out); !strings.Contains(o, "open: <nil>") && !strings.Contains(o, "--reset-state") {
		t.Errorf("Open of a file with a bad page: %s, want an error naming --reset-state", o)
	}
}

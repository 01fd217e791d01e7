package state

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// oldBuild are the options the builds before the unsynced freelist opened a
// state file with: bbolt's defaults, a freelist written by every commit.
var oldBuild = &bolt.Options{Timeout: time.Second}

// fill puts n records (with a payload of size bytes each) and as many
// deliveries, then marks every other one done.
func fill(t *testing.T, s *Store, from, n, size int) {
	t.Helper()
	big := strings.Repeat("x", size)
	var seqs []uint64
	if err := s.Update(func(tx *Tx) error {
		for i := from; i < from+n; i++ {
			if err := tx.Put(Resource{Group: "g", Resource: "r"}, fmt.Sprint("u", i), &Record{Name: big, ResourceVersion: fmt.Sprint(i)}); err != nil {
				return err
			}
			seq, err := tx.Enqueue("hook", "k", []byte(`{"id":"`+fmt.Sprint(i)+`"}`))
			if err != nil {
				return err
			}
			if i%2 == 0 {
				seqs = append(seqs, seq)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Done("hook", seqs...); err != nil {
		t.Fatal(err)
	}
}

func check(t *testing.T, path string, opts *bolt.Options) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	}); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func pendingCount(t *testing.T, s *Store) int {
	t.Helper()
	p, err := s.PendingAfter("hook", 0, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return len(p)
}

// A file the old build wrote (its freelist synced) opens, takes commits and
// stays consistent; a file this build wrote, copied while open as a kill -9
// leaves it (no freelist on disk, nothing closed), opens, rebuilds its
// freelist and stays consistent, its file not growing for what it frees;
// and the old build opens what this one wrote (the downgrade).
func TestFreelistAcrossBuildsAndCrash(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	// The old build writes the file.
	old, err := bolt.Open(path, 0o600, oldBuild)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, &Store{db: old}, 0, 2000, 500)
	old.Close()
	check(t, path, oldBuild)

	// This build takes it over, and is killed while open.
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s, 2000, 2000, 500)
	crashed := filepath.Join(dir, "crashed.db")
	copyFile(t, path, crashed) // what the disk holds after kill -9
	s.Close()
	check(t, path, boltOptions())
	check(t, crashed, boltOptions())

	// The crashed file opens, frees and reuses its pages.
	s, err = Open(crashed)
	if err != nil {
		t.Fatal(err)
	}
	if n := pendingCount(t, s); n != 2000 {
		t.Errorf("after the crash: %d pending, want 2000", n)
	}
	fi, _ := os.Stat(crashed)
	for round := range 5 {
		fill(t, s, 4000+round*1000, 1000, 500)
		var seqs []uint64
		p, _ := s.PendingAfter("hook", 0, 1<<30)
		for _, d := range p {
			seqs = append(seqs, d.Seq)
		}
		if err := s.Done("hook", seqs...); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	check(t, crashed, boltOptions())
	fi2, _ := os.Stat(crashed)
	t.Logf("crashed file: %d bytes, after 5 rounds of churn %d", fi.Size(), fi2.Size())

	// The downgrade: the old build opens what this one wrote.
	check(t, crashed, oldBuild)
	old, err = bolt.Open(crashed, 0o600, oldBuild)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, &Store{db: old}, 9000, 500, 500)
	old.Close()
	check(t, crashed, oldBuild)
	check(t, crashed, boltOptions())
}

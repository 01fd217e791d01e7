//go:build linux

package state

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/internal/testos"
)

// committerOn runs a committer on a fresh state file at path holding one
// record of u at version 1; failures counts the transactions refused.
func committerOn(t *testing.T, path string, logs *bytes.Buffer, failures *atomic.Int64) (*Store, *Committer, chan struct{}) {
	t.Helper()
	return committerWith(t, path, logs, CommitterOptions{Failed: func(error) { failures.Add(1) }})
}

// committerWith is committerOn with opts (their Logger writes to logs).
func committerWith(t *testing.T, path string, logs *bytes.Buffer, opts CommitterOptions) (*Store, *Committer, chan struct{}) {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	c := NewCommitter(s, opts)
	ran := make(chan struct{})
	go func() { c.Run(); close(ran) }()
	if err := submitWait(c, "1", nil); err != nil {
		t.Fatal(err)
	}
	return s, c, ran
}

// fillDisk stops the file at path from growing, as a full disk would: a
// transaction that needs more room than the file has is refused. lift lifts it.
func fillDisk(t *testing.T, path string) (lift func()) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return testos.LimitFileSize(t, fi.Size())
}

// submit records u at version rv and queues payload for action out, as the
// watcher does for one event; the error of its commit comes on the channel.
func submit(c *Committer, rv string, payload []byte) <-chan error {
	done := make(chan error, 1)
	c.Submit(len(payload), func(tx *Tx) error {
		if err := tx.Put(Resource{Group: "g", Resource: "r"}, "u", &Record{Name: "u", ResourceVersion: rv}); err != nil {
			return err
		}
		if payload == nil {
			return nil
		}
		_, err := tx.Enqueue("out", "u", payload)
		return err
	}, func(err error) { done <- err })
	return done
}

func submitWait(c *Committer, rv string, payload []byte) error {
	return <-submit(c, rv, payload)
}

func recordedVersion(t *testing.T, s *Store) string {
	t.Helper()
	var rv string
	if err := s.View(func(tx *Tx) error {
		r, err := tx.Get(Resource{Group: "g", Resource: "r"}, "u")
		if r != nil {
			rv = r.ResourceVersion
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return rv
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A transaction the file refuses (here: the file cannot grow) keeps its
// events: it is retried until the file takes it, nothing submitted after it
// lands first (the object's record does not move past an event not on disk),
// and once the disk recovers both events are on disk, in order, for the next
// start too.
func TestCommitterRetriesRefusedCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	var logs bytes.Buffer
	var failures atomic.Int64
	s, c, ran := committerOn(t, path, &logs, &failures)
	lift := fillDisk(t, path)
	big := []byte(`{"id":"u:2:update","data":"` + strings.Repeat("x", 256<<10) + `"}`)
	first := submit(c, "2", big)                            // needs the file to grow: refused
	second := submit(c, "3", []byte(`{"id":"u:3:update"}`)) // would fit, but comes after
	waitFor(t, "commits to be refused and retried", func() bool { return failures.Load() >= 2 && c.Err() != nil })
	select {
	case err := <-first:
		t.Fatalf("the refused commit ended (%v) while the disk was full", err)
	case err := <-second:
		t.Fatalf("a later commit ended (%v) before the refused one", err)
	default:
	}
	if rv := recordedVersion(t, s); rv != "1" {
		t.Errorf("recorded version %s while the disk was full, want 1", rv)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(c.Err().Error(), "file") {
		t.Errorf("refusal not reported: Err %v, logs:\n%s", c.Err(), logs.String())
	}

	lift() // the disk recovers
	for i, ch := range []<-chan error{first, second} {
		select {
		case err := <-ch:
			if err != nil {
				t.Fatalf("commit %d after recovery: %v", i+1, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("commit %d did not land after the disk recovered", i+1)
		}
	}
	if c.Err() != nil {
		t.Errorf("Err after recovery = %v", c.Err())
	}
	c.Close()
	<-ran
	_ = s.Close()

	s, err := Open(path) // the next start
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rv := recordedVersion(t, s); rv != "3" {
		t.Errorf("next start: recorded version %s, want 3", rv)
	}
	got, err := s.PendingAfter("out", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !bytes.Contains(got[0].JSON, []byte("u:2:update")) || !bytes.Contains(got[1].JSON, []byte("u:3:update")) {
		t.Errorf("next start: %d pending deliveries, want u:2 then u:3", len(got))
	}
}

// Stopping while the file refuses commits gives them up with every change
// after them, unwritten: the record on disk stays at the last event that is
// on disk, so the next start's comparison finds what happened since.
func TestCommitterGivesUpAtCloseWithoutMovingRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	var logs bytes.Buffer
	var failures atomic.Int64
	s, c, ran := committerOn(t, path, &logs, &failures)
	lift := fillDisk(t, path)
	first := submit(c, "2", []byte(`{"data":"`+strings.Repeat("x", 256<<10)+`"}`))
	second := submit(c, "3", nil)
	waitFor(t, "a commit to be refused", func() bool { return c.Err() != nil })
	// Submitting never blocks (an informer's handler, a reload holding its
	// lock), however many changes wait for the disk.
	submitted := make(chan []<-chan error)
	go func() {
		var chs []<-chan error
		for range 5000 {
			chs = append(chs, submit(c, "4", nil))
		}
		submitted <- chs
	}()
	var more []<-chan error
	select {
	case more = <-submitted:
	case <-time.After(10 * time.Second):
		t.Fatal("Submit blocked while the disk was full")
	}
	c.Close()
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after Close while the disk was full")
	}
	if err := <-first; err == nil {
		t.Error("the refused commit reported success")
	}
	if err := <-second; err == nil {
		t.Error("the commit after it reported success") // refused with it, or ErrStopped
	}
	for _, ch := range more {
		if err := <-ch; !errors.Is(err, ErrGivenUp) {
			t.Fatalf("a change submitted while the disk was full ended with %v after Close, want ErrGivenUp", err)
		}
	}
	// One line says what was given up, with the count; not one per change.
	if n := strings.Count(logs.String(), "level=ERROR"); n != 1 || !strings.Contains(logs.String(), "notWritten=5002") {
		t.Errorf("%d ERROR lines, want one with notWritten=5002:\n%s", n, logs.String())
	}
	if n, b := c.Pending(); n != 0 || b != 0 {
		t.Errorf("Pending after Run returned = %d, %d", n, b)
	}
	lift()
	if rv := recordedVersion(t, s); rv != "1" {
		t.Errorf("recorded version %s, want 1: a record moved past an event not on disk", rv)
	}
	if n, err := s.PendingActions(); err != nil || len(n) != 0 {
		t.Errorf("pending %v %v, want none", n, err)
	}
	_ = s.Close()
}

package state

import (
	"path/filepath"
	"testing"
	"time"
)

// A reshard keeps when the previous spec last ran: its last commit, or its
// clean stop, whichever is later; commits under the new spec do not move it.
func TestReshardedAfter(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	view := func() (at time.Time, ok bool) {
		_ = s.View(func(tx *Tx) error { at, ok = tx.ReshardedAfter(); return nil })
		return at, ok
	}
	c := NewCommitter(s, CommitterOptions{})
	go c.Run()
	c.Submit(1, func(*Tx) error { return nil }, func(error) {})
	c.Flush()
	before := time.Now()
	if err := s.MarkStopped(); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	if _, ok := view(); ok {
		t.Error("a spec end known before any reshard")
	}
	if _, err := s.Reshard("0/2 by uid", func(string, string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	at, ok := view()
	if !ok || at.Before(before) || at.After(after) {
		t.Errorf("spec ended %v (%v), want the stop, between %v and %v", at, ok, before, after)
	}
	c.Submit(1, func(*Tx) error { return nil }, func(error) {})
	c.Flush()
	c.Close()
	if again, _ := view(); !again.Equal(at) {
		t.Errorf("a commit under the new spec moved its start: %v, was %v", again, at)
	}
}

// Forget drops the records and baselines and keeps the queues; the last run
// stays known.
func TestForget(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res := Resource{Resource: "configmaps"}
	err = s.Update(func(tx *Tx) error {
		if err := tx.Put(res, "u", &Record{Namespace: "ns", Name: "a", ResourceVersion: "1"}); err != nil {
			return err
		}
		return tx.SetBaseline(res.In(""))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.LastRun(); ok {
		t.Error("a last run known before any run")
	}
	if err := s.MarkStopped(); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Forget(); n != 1 || err != nil {
		t.Fatalf("forget = %d, %v; want 1 record", n, err)
	}
	_ = s.View(func(tx *Tx) error {
		if got, _ := tx.Get(res, "u"); got != nil || tx.HasBaseline(res.In("")) {
			t.Error("a record or a baseline left")
		}
		return nil
	})
	if _, ok := s.LastRun(); !ok {
		t.Error("the last run forgotten")
	}
}

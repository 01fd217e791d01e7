//go:build linux

package state

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// riderOn returns a committer of marks on s that lingers for linger and
// rides in carrier's transactions, running.
func riderOn(t *testing.T, s *Store, carrier *Committer, linger time.Duration) (*Committer, chan struct{}) {
	t.Helper()
	r := NewCommitter(s, CommitterOptions{What: "delivery marks", Linger: linger})
	if carrier != nil {
		carrier.Carry(r)
	}
	ran := make(chan struct{})
	go func() { r.Run(); close(ran) }()
	return r, ran
}

// later queues a mark of seq on r; its transaction's id comes on the channel
// (0 and the error when it failed).
func later(r *Committer, seq uint64) <-chan txResult {
	done := make(chan txResult, 1)
	var id int
	r.Later(func(tx *Tx) error { id = tx.tx.ID(); return tx.Done("out", seq) }, func(err error) { done <- txResult{id, err} })
	return done
}

type txResult struct {
	id  int
	err error
}

func wait(t *testing.T, what string, ch <-chan txResult) txResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not land", what)
		return txResult{}
	}
}

// A change submitted with Later and nothing else to ride with lingers, then
// lands by itself.
func TestLaterLingersThenLands(t *testing.T) {
	s, c, ran := committerOn(t, filepath.Join(t.TempDir(), "state.db"), &bytes.Buffer{}, &atomic.Int64{})
	defer func() { c.Close(); <-ran; _ = s.Close() }()
	r, rran := riderOn(t, s, nil, 300*time.Millisecond)
	defer func() { r.Close(); <-rran }()
	start := time.Now()
	mark := later(r, 1)
	select {
	case <-mark:
		t.Fatalf("the mark landed after %s, before lingering", time.Since(start))
	case <-time.After(100 * time.Millisecond):
	}
	if res := wait(t, "the lingering mark", mark); res.err != nil {
		t.Fatal(res.err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("landed after %s, want after its linger of 300ms", d)
	}
}

// A lingering mark rides in the carrier's next transaction: no transaction
// of its own.
func TestLaterRidesInTheCarriersCommit(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := NewCommitter(s, CommitterOptions{})
	r, rran := riderOn(t, s, c, time.Hour)
	ran := make(chan struct{})
	go func() { c.Run(); close(ran) }()
	mark := later(r, 1)
	var id int
	event := make(chan txResult, 1)
	c.Submit(0, func(tx *Tx) error { id = tx.tx.ID(); return nil }, func(err error) { event <- txResult{id, err} })
	ev, mk := wait(t, "the event", event), wait(t, "the mark", mark)
	if ev.err != nil || mk.err != nil || mk.id != ev.id {
		t.Errorf("the mark landed in transaction %d (%v), the event in %d (%v): want one", mk.id, mk.err, ev.id, ev.err)
	}
	if n, _ := r.Pending(); n != 0 {
		t.Errorf("the marks' committer counts %d pending after its mark landed", n)
	}
	c.Close()
	<-ran
	r.Close()
	<-rran
}

// Flush and Close apply what lingers at once: a clean stop (the SIGTERM
// drain's end) writes every mark.
func TestLaterFlushAndCloseApplyAtOnce(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, ran := riderOn(t, s, nil, time.Hour)
	first := later(r, 1)
	r.Flush()
	select {
	case res := <-first:
		if res.err != nil {
			t.Fatal(res.err)
		}
	default:
		t.Fatal("Flush returned before the lingering mark landed")
	}
	second := later(r, 2)
	r.Close()
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return at Close: it let a mark linger")
	}
	if res := wait(t, "the mark before Close", second); res.err != nil {
		t.Fatal(res.err)
	}
}

// A carrier takes only the lingering changes at the head of the rider's
// queue, and the rider applies nothing while the carrier holds some: the
// rider's changes land in the order they came (a Flush after a carried mark
// does not return before the mark landed).
func TestLendKeepsTheRidersOrder(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := NewCommitter(s, CommitterOptions{Linger: time.Hour}) // not running: its queue is inspected
	var order []string
	note := func(what string) func(*Tx) error { return func(*Tx) error { order = append(order, what); return nil } }
	r.Later(note("a"), func(error) {})
	r.Submit(0, note("flush"), func(error) {})
	r.Later(note("b"), func(error) {})
	lent := r.lend()
	if len(lent) != 1 {
		t.Fatalf("lent %d changes, want the one before the first urgent", len(lent))
	}
	if batch, _, _ := r.take(); batch != nil {
		t.Fatalf("the rider took %d changes while a carrier held one", len(batch))
	}
	if more := r.lend(); more != nil {
		t.Fatalf("lent %d more while a carrier held one", len(more))
	}
	c := NewCommitter(s, CommitterOptions{})
	if _, err := c.apply(lent); err != nil {
		t.Fatal(err)
	}
	batch, _, _ := r.take()
	if len(batch) != 2 {
		t.Fatalf("after the carried change landed the rider took %d, want 2", len(batch))
	}
	if _, err := r.apply(batch); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ","); got != "a,flush,b" {
		t.Errorf("applied %s, want a,flush,b", got)
	}
	if n, _ := r.Pending(); n != 0 {
		t.Errorf("%d pending after all landed", n)
	}
}

// A mark carried by a transaction the file refuses is given back, and lands
// by itself (a mark needs no room) while the refused transaction waits for
// the disk; that one lands once the disk recovers.
func TestCarriedMarksDoNotWaitForARefusedCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	var failures atomic.Int64
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := NewCommitter(s, CommitterOptions{Failed: func(error) { failures.Add(1) }, Logger: slog.New(slog.DiscardHandler)})
	r, rran := riderOn(t, s, c, time.Hour)
	ran := make(chan struct{})
	go func() { c.Run(); close(ran) }()
	if err := submitWait(c, "1", []byte(`{"id":"u:1"}`)); err != nil {
		t.Fatal(err)
	}
	lift := fillDisk(t, path)
	mark := later(r, 1)
	big := submit(c, "2", []byte(`{"data":"`+strings.Repeat("x", 256<<10)+`"}`))
	if res := wait(t, "the mark, given back", mark); res.err != nil {
		t.Fatal(res.err)
	}
	if failures.Load() == 0 {
		t.Error("the mark landed, but no commit was refused: the test did not carry it into one")
	}
	select {
	case err := <-big:
		t.Fatalf("the refused commit ended (%v) while the disk was full", err)
	default:
	}
	lift()
	if err := <-big; err != nil {
		t.Fatal(err)
	}
	c.Close()
	<-ran
	r.Close()
	<-rran
	if n, b := r.Pending(); n != 0 || b != 0 {
		t.Errorf("the marks' committer counts %d pending (%d bytes) after all ended", n, b)
	}
	pending, err := s.PendingAfter("out", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].Seq != 2 {
		t.Errorf("pending at the end: %v, want the big delivery alone (seq 2)", pending)
	}
}

// With Gather, changes that come in a burst share a transaction; a change
// after a quiet spell is committed at once, not held.
func TestGatherSharesABurstsCommit(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := NewCommitter(s, CommitterOptions{Gather: 200 * time.Millisecond})
	ran := make(chan struct{})
	go func() { c.Run(); close(ran) }()
	defer func() { c.Close(); <-ran }()
	submitID := func() <-chan txResult {
		done := make(chan txResult, 1)
		var id int
		c.Submit(0, func(tx *Tx) error { id = tx.tx.ID(); return nil }, func(err error) { done <- txResult{id, err} })
		return done
	}
	start := time.Now()
	alone := wait(t, "a change after a quiet spell", submitID())
	if d := time.Since(start); d > 150*time.Millisecond {
		t.Errorf("a change after a quiet spell landed after %s: held", d)
	}
	time.Sleep(250 * time.Millisecond) // quiet again
	var burst []<-chan txResult
	for range 30 {
		burst = append(burst, submitID())
		time.Sleep(time.Millisecond)
	}
	ids := map[int]bool{}
	for i, ch := range burst {
		res := wait(t, "a change of the burst", ch)
		if res.err != nil {
			t.Fatal(res.err)
		}
		if res.id == alone.id {
			t.Fatalf("change %d of the burst landed in the earlier transaction", i)
		}
		ids[res.id] = true
	}
	// The first burstStreak come as a quiet spell ends and go at once (as
	// group commits do: those that come during a commit share the next);
	// the rest are held and share one transaction (two if a commit was
	// still running).
	if len(ids) > burstStreak+4 {
		t.Errorf("a burst of 30 took %d transactions, want them shared", len(ids))
	}
}

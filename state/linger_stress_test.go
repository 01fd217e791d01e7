//go:build linux

package state

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/internal/testos"
)

// Events and their marks, as the watcher makes them (a delivery's mark comes
// once its event's commit landed, from another goroutine), through a carrier
// with Gather and a rider with Linger, while the file now and then refuses
// every commit that needs room: every change ends once, the marks land in the
// order they were made, what was marked is gone from disk, the rest is
// there, and both committers return at Close with nothing pending.
func TestCarrierAndRiderUnderRefusalsKeepEveryMarkInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	quiet := slog.New(slog.DiscardHandler)
	var refused atomic.Int64
	failed := func(error) { refused.Add(1) }
	c := NewCommitter(s, CommitterOptions{Logger: quiet, Failed: failed, Gather: 2 * time.Millisecond})
	r := NewCommitter(s, CommitterOptions{Logger: quiet, Failed: failed, What: "delivery marks", Linger: 15 * time.Millisecond})
	cran, rran := runCarrying(c, r)

	var (
		mu       sync.Mutex
		marked   = map[uint64]bool{} // seq → its mark landed
		order    []int               // the transaction each mark landed in, in the order made
		ends     atomic.Int64
		made     atomic.Int64
		markWG   sync.WaitGroup
		eventsWG sync.WaitGroup
	)
	var makeMu sync.Mutex // a mark's place in order is the order of Later calls
	mark := func(seq uint64) {
		makeMu.Lock()
		defer makeMu.Unlock()
		mu.Lock()
		i := len(order)
		order = append(order, -1)
		mu.Unlock()
		made.Add(1)
		var id int
		var once atomic.Int32
		r.Later(func(tx *Tx) error { id = tx.tx.ID(); return tx.Done("out", seq) }, func(err error) {
			defer markWG.Done()
			if once.Add(1) != 1 {
				t.Errorf("the mark of %d ended twice", seq)
			}
			ends.Add(1)
			if err != nil {
				t.Errorf("the mark of %d: %v", seq, err)
				return
			}
			mu.Lock()
			order[i], marked[seq] = id, true
			mu.Unlock()
		})
	}
	payload := []byte(`{"data":"` + strings.Repeat("x", 20000) + `"}`)
	rng := rand.New(rand.NewPCG(1, 2))
	var limited func()
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		eventsWG.Add(1)
		var seq uint64
		c.Submit(len(payload), func(tx *Tx) error {
			if err := tx.Put(Resource{Group: "g", Resource: "r"}, fmt.Sprint("o", i%50), &Record{Name: "o", ResourceVersion: fmt.Sprint(i)}); err != nil {
				return err
			}
			var err error
			seq, err = tx.Enqueue("out", "k", payload)
			return err
		}, func(err error) {
			defer eventsWG.Done()
			if err != nil {
				t.Errorf("event %d: %v", i, err)
				return
			}
			if seq%7 != 0 { // most are delivered at once
				markWG.Add(1)
				go mark(seq)
			}
		})
		switch n := rng.IntN(100); {
		case n < 3 && limited == nil:
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			limited = testos.LimitFileSize(t, fi.Size()/2) // writes to the upper pages fail
		case n < 12 && limited != nil:
			limited()
			limited = nil
		case n < 15:
			go r.Flush()
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
	}
	if limited != nil {
		limited()
	}
	waitDone(t, "every event", &eventsWG)
	waitDone(t, "every mark", &markWG)
	c.Close()
	r.Close()
	for what, ch := range map[string]<-chan struct{}{"the carrier": cran, "the rider": rran} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s's Run did not return at Close", what)
		}
	}
	for name, cm := range map[string]*Committer{"carrier": c, "rider": r} {
		if n, b := cm.Pending(); n != 0 || b != 0 {
			t.Errorf("the %s counts %d pending (%d bytes) after all ended", name, n, b)
		}
	}
	if ends.Load() != made.Load() {
		t.Errorf("%d marks made, %d ended", made.Load(), ends.Load())
	}
	for i := 1; i < len(order); i++ {
		if order[i] < order[i-1] {
			t.Fatalf("mark %d landed in transaction %d, before mark %d (transaction %d)", i, order[i], i-1, order[i-1])
		}
	}
	pending, err := s.PendingAfter("out", 0, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pending {
		if marked[p.Seq] {
			t.Errorf("delivery %d was marked done and is still pending", p.Seq)
		}
	}
	t.Logf("%d marks, %d left pending, %d refusals", made.Load(), len(pending), refused.Load())
	if refused.Load() == 0 {
		t.Error("no commit was refused: the test did not test refusals")
	}
}

func waitDone(t *testing.T, what string, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not end", what)
	}
}

// runCarrying makes c carry r's lingering changes and runs both; each
// channel closes once its Run returned.
func runCarrying(c, r *Committer) (cran, rran <-chan struct{}) {
	c.Carry(r)
	cdone, rdone := make(chan struct{}), make(chan struct{})
	go func() { c.Run(); close(cdone) }()
	go func() { r.Run(); close(rdone) }()
	return cdone, rdone
}

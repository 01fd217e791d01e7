//go:build linux

package state

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// At 100 changes a second with exponential gaps, BurstHold holds (nearly)
// none: the rate over the last sustainedN is seldom sustainedRate. Gather is
// off here, so that what is held is BurstHold's.
func TestBurstHoldLeavesASteadyFlowAlone(t *testing.T) {
	t.Parallel()
	const n, rate = 400, 100.0
	c := NewCommitter(nil, CommitterOptions{BurstHold: 50 * time.Millisecond})
	rng := rand.New(rand.NewPCG(5, 6))
	held := 0
	for range n {
		if !c.gather().IsZero() {
			held++
		}
		time.Sleep(time.Duration(rng.ExpFloat64() * float64(time.Second) / rate))
	}
	t.Logf("at %.0f/s, BurstHold held %d of %d changes", rate, held, n)
	if held > n/100 {
		t.Errorf("at %.0f/s, BurstHold held %d of %d changes (each up to 50ms): a steady flow is taken for a sustained one", rate, held, n)
	}
}

// A flow of about 250 a second is held from its sustainedN-th change on,
// each change by BurstHold from when it came; the ones before are not.
func TestBurstHoldHoldsASustainedFlow(t *testing.T) {
	t.Parallel()
	const hold = 50 * time.Millisecond
	c := NewCommitter(nil, CommitterOptions{BurstHold: hold})
	var first, late []time.Duration // how long each change is held
	for i := range 3 * sustainedN {
		now := time.Now()
		var d time.Duration
		if h := c.gather(); !h.IsZero() {
			d = h.Sub(now)
		}
		if i < sustainedN-1 {
			first = append(first, d)
		} else {
			late = append(late, d)
		}
		time.Sleep(4 * time.Millisecond)
	}
	for i, d := range first {
		if d != 0 {
			t.Errorf("change %d, before %d had come, was held %s", i, sustainedN, d)
		}
	}
	// A slow machine may stretch 4ms sleeps past 160ms per 32; most must
	// still be held, none longer than BurstHold.
	heldN := 0
	for _, d := range late {
		if d > hold+time.Millisecond {
			t.Errorf("a change was held %s, past BurstHold %s", d, hold)
		}
		if d > hold-5*time.Millisecond {
			heldN++
		}
	}
	if heldN < len(late)/2 {
		t.Errorf("of %d changes of a sustained flow of 250 a second, only %d were held ~%s: holds %v", len(late), heldN, hold, late)
	}
}

// Through a running committer: a sustained flow shares transactions, once
// its first sustainedN changes came about one per BurstHold; no change lands
// later than BurstHold and two commits after it was submitted, and the last
// change of the flow lands without waiting for a change after it.
func TestBurstHoldSharesASustainedFlowsCommits(t *testing.T) {
	t.Parallel()
	const hold, n = 50 * time.Millisecond, 250
	s, c, ran := committerWith(t, filepath.Join(t.TempDir(), "state.db"), &bytes.Buffer{}, CommitterOptions{Gather: 10 * time.Millisecond, BurstHold: hold})
	defer func() { c.Close(); <-ran; _ = s.Close() }()
	var mu sync.Mutex
	ids := make([]int, n) // the transaction of each change
	var worst time.Duration
	var wg sync.WaitGroup
	var sustained time.Time // when change sustainedN came
	for i := range n {
		wg.Add(1)
		at := time.Now()
		if i == sustainedN {
			sustained = at
		}
		var id int
		c.Submit(0, func(tx *Tx) error { id = tx.tx.ID(); return nil }, func(err error) {
			defer wg.Done()
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			ids[i] = id
			worst = max(worst, time.Since(at))
		})
		time.Sleep(4 * time.Millisecond)
	}
	wg.Wait()
	took := time.Since(sustained)
	txs := map[int]bool{}
	for _, id := range ids[sustainedN:] {
		txs[id] = true
	}
	// Without BurstHold this flow takes about one transaction per two
	// changes (BenchmarkEvent, rate=250/s: 0.43 per change).
	want := int(took/hold) + 2
	t.Logf("%d changes after the first %d, in %s, took %d transactions; the longest wait %s", n-sustainedN, sustainedN, took.Round(time.Millisecond), len(txs), worst.Round(time.Millisecond))
	if len(txs) > want {
		t.Errorf("%d changes of a sustained flow, over %s, took %d transactions, want at most %d (one per %s)", n-sustainedN, took.Round(time.Millisecond), len(txs), want, hold)
	}
	// A change waits its hold, then the commit before its own and its own.
	if limit := hold + 500*time.Millisecond; worst > limit {
		t.Errorf("a change landed %s after it was submitted, past its hold %s and two commits", worst, hold)
	}
}

// A sustained flow's hold follows its rate: about as long as sustainedN/2
// changes take to come, so a faster flow waits less, and no change waits
// more than sustainedN/2 at sustainedRate (80ms) whatever BurstHold allows.
func TestBurstHoldFollowsTheRate(t *testing.T) {
	t.Parallel()
	holds := func(gap time.Duration) (median, longest time.Duration) {
		c := NewCommitter(nil, CommitterOptions{BurstHold: time.Second})
		var hs []time.Duration
		for range 3 * sustainedN {
			now := time.Now()
			if h := c.gather(); !h.IsZero() {
				hs = append(hs, h.Sub(now))
			}
			time.Sleep(gap)
		}
		if len(hs) == 0 {
			return 0, 0
		}
		slices.Sort(hs)
		return hs[len(hs)/2], hs[len(hs)-1]
	}
	slowMedian, slowLongest := holds(4 * time.Millisecond)
	fastMedian, fastLongest := holds(time.Millisecond)
	t.Logf("4ms apart: held %s (longest %s); 1ms apart: held %s (longest %s)", slowMedian, slowLongest, fastMedian, fastLongest)
	limit := sustainedN / 2 * time.Second / sustainedRate
	for _, d := range []time.Duration{slowLongest, fastLongest} {
		if d > limit+time.Millisecond {
			t.Errorf("a change was held %s, past %s (%d changes at %d a second)", d, limit, sustainedN/2, sustainedRate)
		}
	}
	if slowMedian == 0 || fastMedian == 0 {
		t.Fatalf("a sustained flow was not held: 4ms apart %s, 1ms apart %s", slowMedian, fastMedian)
	}
	if fastMedian >= slowMedian {
		t.Errorf("a flow 1ms apart was held %s, no less than one 4ms apart (%s)", fastMedian, slowMedian)
	}
}

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

// gatherClock submits changes to a committer's gatherAt on a clock of its
// own: no sleeps, the same holds every run.
type gatherClock struct {
	c   *Committer
	now time.Time
}

func newGatherClock(opts CommitterOptions) *gatherClock {
	return &gatherClock{c: NewCommitter(nil, opts), now: time.Unix(1_000_000, 0)}
}

// after submits a change gap after the one before and returns its hold (0:
// none).
func (g *gatherClock) after(gap time.Duration) time.Duration {
	g.now = g.now.Add(gap)
	g.c.mu.Lock()
	defer g.c.mu.Unlock()
	if h := g.c.gatherAt(g.now); !h.IsZero() {
		return h.Sub(g.now)
	}
	return 0
}

// expGap is a gap of a flow of rate changes a second with exponential gaps
// (independent objects' updates).
func expGap(rng *rand.Rand, rate float64) time.Duration {
	return time.Duration(rng.ExpFloat64() * float64(time.Second) / rate)
}

// poissonHolds feeds gatherAt a flow of n changes with exponential gaps at
// rate a second, and returns the share of them held and each hold.
func poissonHolds(opts CommitterOptions, rate float64, n int, seed uint64) (float64, []time.Duration) {
	g := newGatherClock(opts)
	rng := rand.New(rand.NewPCG(seed, uint64(rate)))
	var holds []time.Duration
	for range n {
		if d := g.after(expGap(rng, rate)); d > 0 {
			holds = append(holds, d)
		}
	}
	return float64(len(holds)) / float64(n), holds
}

// BurstHold holds (nearly) none of a flow of 100 or 120 changes a second,
// most of one of 200 and nearly all of one of 250, none longer than BurstHold; at 1 000 a
// second a change waits about as long as holdN more take to come (16ms).
// Gather is off, so that what is held is BurstHold's.
func TestBurstHoldFollowsTheRate(t *testing.T) {
	t.Parallel()
	const hold = 80 * time.Millisecond
	opts := CommitterOptions{BurstHold: hold}
	for _, c := range []struct {
		rate     float64
		min, max float64 // share of changes held
	}{{100, 0, 0.001}, {120, 0, 0.02}, {200, 0.75, 1}, {250, 0.9, 1}, {1000, 0.95, 1}} {
		var all []time.Duration
		share := 0.0
		for seed := range uint64(3) {
			s, hs := poissonHolds(opts, c.rate, 20000, seed)
			share += s / 3
			all = append(all, hs...)
		}
		slices.Sort(all)
		median := time.Duration(0)
		if len(all) > 0 {
			median = all[len(all)/2]
		}
		t.Logf("%.0f a second: %.3f%% of changes held, median hold %s", c.rate, 100*share, median)
		if share < c.min || share > c.max {
			t.Errorf("%.0f a second: %.3f%% of changes held, want %.1f%% to %.1f%%", c.rate, 100*share, 100*c.min, 100*c.max)
		}
		if len(all) > 0 && all[len(all)-1] > hold {
			t.Errorf("%.0f a second: a change was held %s, past BurstHold %s", c.rate, all[len(all)-1], hold)
		}
		if c.rate == 1000 && (median < 12*time.Millisecond || median > 20*time.Millisecond) {
			t.Errorf("1000 a second: held %s, want about the 16ms that %d changes take to come", median, holdN)
		}
	}
}

// A flow of a change every 2ms or so (400 a second; a loaded machine may
// stretch the sleeps twice and still be past sustainedRate) is held from its
// sustainedN-th change on, by the real clock, and never past BurstHold; the
// changes before are not held. How long each is held, against the rate, is
// TestBurstHoldFollowsTheRate's, on a clock of its own.
func TestBurstHoldHoldsASustainedFlow(t *testing.T) {
	t.Parallel()
	const hold = 50 * time.Millisecond
	c := NewCommitter(nil, CommitterOptions{BurstHold: hold})
	var first, late []time.Duration // how long each change is held
	for i := range 3 * sustainedN {
		var d time.Duration
		if h := c.gather(); !h.IsZero() {
			d = time.Until(h) // from after the call: never past the hold gather took
		}
		if i < sustainedN-1 {
			first = append(first, d)
		} else {
			late = append(late, d)
		}
		time.Sleep(2 * time.Millisecond)
	}
	for i, d := range first {
		if d != 0 {
			t.Errorf("change %d, before %d had come, was held %s", i, sustainedN, d)
		}
	}
	heldN := 0
	for _, d := range late {
		if d > hold {
			t.Errorf("a change was held %s, past BurstHold %s", d, hold)
		}
		if d > 0 {
			heldN++
		}
	}
	if heldN < len(late)*3/4 {
		t.Errorf("of %d changes of a sustained flow, only %d were held: holds %v", len(late), heldN, late)
	}
}

// Through a running committer: a sustained flow (a change every 2ms or so)
// shares transactions, once its first sustainedN changes came about 16 a
// transaction; no change lands later than BurstHold and two commits after it
// was submitted, and the last change of the flow lands without waiting for a
// change after it.
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
		time.Sleep(2 * time.Millisecond)
	}
	wg.Wait()
	took := time.Since(sustained)
	txs := map[int]bool{}
	for _, id := range ids[sustainedN:] {
		txs[id] = true
	}
	// Held, about 16 changes share a transaction; without BurstHold,
	// Gather's 10ms holds take one per four or five at this rate (a loaded
	// machine that stretches the sleeps makes that fewer still).
	want := (n-sustainedN)/8 + 2
	t.Logf("%d changes after the first %d, in %s, took %d transactions; the longest wait %s", n-sustainedN, sustainedN, took.Round(time.Millisecond), len(txs), worst.Round(time.Millisecond))
	if len(txs) > want {
		t.Errorf("%d changes of a sustained flow, over %s, took %d transactions, want at most %d (8 or more changes each)", n-sustainedN, took.Round(time.Millisecond), len(txs), want)
	}
	// A change waits its hold, then the commit before its own and its own.
	if limit := hold + 500*time.Millisecond; worst > limit {
		t.Errorf("a change landed %s after it was submitted, past its hold %s and two commits", worst, hold)
	}
}

// After a burst (a relist: 10 000 changes at 20 000 a second) a slower flow
// (a change every 14ms, 70 a second) is not held for the 600ms in which the
// burst's changes are still among the last sustainedN: the gaps' average
// says it slowed within a few changes, and those few are held briefly.
func TestBurstHoldLetsGoAfterABurst(t *testing.T) {
	t.Parallel()
	g := newGatherClock(CommitterOptions{BurstHold: 80 * time.Millisecond})
	for range 10000 {
		g.after(50 * time.Microsecond)
	}
	held, longest := 0, time.Duration(0)
	for range 100 {
		if d := g.after(14 * time.Millisecond); d > 0 {
			held++
			longest = max(longest, d)
		}
	}
	t.Logf("after the burst, %d of 100 changes 14ms apart were held, the longest %s", held, longest)
	if longest > 15*time.Millisecond || held > 8 {
		t.Errorf("after a burst, %d of 100 changes 14ms apart were held, the longest %s: a slower flow is taken for the burst", held, longest)
	}
}

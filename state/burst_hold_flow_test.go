//go:build linux

package state

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// After a burst (a relist: 10 000 changes at 20 000 a second) a flow of 100
// changes a second with exponential gaps (independent objects' updates, as
// TestBurstHoldFollowsTheRate has them). For the 600ms in which the burst is
// still among the last sustainedN, only the gaps' moving average (over about
// 8 changes) stands between the flow and BurstHold, and with exponential gaps
// it dips under 1/160 s now and then: this review proved changes long after
// the slowdown held up to BurstHold, where the doc said "a few, under 15ms".
// What is promised now (the doc says so), and pinned here: no change is held
// once the burst is 600ms past, none longer than BurstHold, and within those
// 600ms about a fifth of the changes are (a quarter at most here).
func TestBurstHoldLetsAPoissonFlowGoAfterABurst(t *testing.T) {
	t.Parallel()
	const runs, hold = 20, 80 * time.Millisecond
	window := sustainedN * time.Second / sustainedRate
	inWindow, heldIn, heldLong, heldAfter := 0, 0, 0, 0
	var longest time.Duration
	for seed := range uint64(runs) {
		g := newGatherClock(CommitterOptions{BurstHold: hold})
		rng := rand.New(rand.NewPCG(seed, 100))
		for range 10000 {
			g.after(50 * time.Microsecond)
		}
		end := g.now
		for range 200 {
			d := g.after(expGap(rng, 100))
			longest = max(longest, d)
			switch after := g.now.Sub(end); {
			case after <= window:
				inWindow++
				if d > 0 {
					heldIn++
				}
				if d > 15*time.Millisecond {
					heldLong++
				}
			case d > 0:
				heldAfter++
			}
		}
	}
	share := float64(heldIn) / float64(inWindow)
	t.Logf("after a burst, a flow of 100 a second (exponential gaps, %d runs): %d of %d changes within %s of it held (%.1f%%; %d over 15ms), %d after; the longest hold %s", runs, heldIn, inWindow, window, 100*share, heldLong, heldAfter, longest)
	if heldAfter > 0 {
		t.Errorf("%d changes were held more than %s after the burst: the burst still vouches for the flow", heldAfter, window)
	}
	if longest > hold {
		t.Errorf("a change was held %s, past BurstHold %s", longest, hold)
	}
	if share > 0.25 {
		t.Errorf("within %s of a burst, %.1f%% of a flow of 100 a second was held", window, 100*share)
	}
}

// The same through a running committer (Gather and BurstHold as the watcher
// has them): a flow of 100 a second with exponential gaps, first by itself
// (the baseline), then after each of four relists' bursts. Past the 600ms
// in which the burst is among the last sustainedN, no change waits much more
// than the baseline's worst (Gather, a commit or two); within them, none more
// than BurstHold and a commit or two.
func TestBurstHoldSlowFlowAfterBurstLandsPromptly(t *testing.T) {
	const hold = 80 * time.Millisecond
	window := sustainedN * time.Second / sustainedRate
	s, c, ran := committerWith(t, filepath.Join(t.TempDir(), "state.db"), &bytes.Buffer{}, CommitterOptions{Gather: 10 * time.Millisecond, BurstHold: hold})
	defer func() { c.Close(); <-ran; _ = s.Close() }()
	rng := rand.New(rand.NewPCG(1, 100))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var baseline, worstIn, worstAfter time.Duration
	for round := range 5 {
		var end time.Time
		if round > 0 {
			for range 2000 { // the burst: submitted as fast as the loop goes
				wg.Add(1)
				c.Submit(0, func(*Tx) error { return nil }, func(error) { wg.Done() })
			}
			end = time.Now()
		}
		for range 100 {
			time.Sleep(expGap(rng, 100))
			wg.Add(1)
			at := time.Now()
			c.Submit(0, func(*Tx) error { return nil }, func(error) {
				defer wg.Done()
				d := time.Since(at)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case round == 0:
					baseline = max(baseline, d)
				case at.Sub(end) <= window+10*time.Millisecond:
					worstIn = max(worstIn, d)
				default:
					worstAfter = max(worstAfter, d)
				}
			})
		}
		waitDone(t, "the round", &wg)
	}
	t.Logf("a flow of 100 a second: the longest wait by itself %s; after bursts, within %s of one %s, past that %s", baseline.Round(time.Millisecond), window, worstIn.Round(time.Millisecond), worstAfter.Round(time.Millisecond))
	// A commit on a loaded machine may take longer in one round than in
	// another: the slack is that, and below the hold of 80ms this would see.
	if limit := max(baseline, 10*time.Millisecond) + 40*time.Millisecond; worstAfter > limit {
		t.Errorf("more than %s after a burst, a change of a flow of 100 a second waited %s, against %s without the burst: BurstHold held it", window, worstAfter.Round(time.Millisecond), baseline.Round(time.Millisecond))
	}
	if limit := hold + max(baseline, 10*time.Millisecond) + 200*time.Millisecond; worstIn > limit {
		t.Errorf("within %s of a burst, a change waited %s, past BurstHold and a commit or two (%s)", window, worstIn.Round(time.Millisecond), limit)
	}
}

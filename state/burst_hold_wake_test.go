//go:build linux

package state

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/internal/testos"
)

// reviewFlow submits n no-op changes gap apart, as a sustained flow (250 a
// second at 4ms): from the sustainedN-th on each is held by BurstHold.
func reviewFlow(c *Committer, n int, gap time.Duration, wg *sync.WaitGroup) {
	for range n {
		wg.Add(1)
		c.Submit(0, func(*Tx) error { return nil }, func(error) { wg.Done() })
		time.Sleep(gap)
	}
}

// headHold is when the first waiting change may be committed at the
// earliest (zero when none waits).
func headHold(c *Committer) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiting) == 0 {
		return time.Time{}
	}
	return c.waiting[0].hold
}

// take() commits a full batch (maxBatch waiting) whatever the head's hold;
// submit() must then wake Run, or the full batch waits out the head's hold
// (up to BurstHold). A flow of 250 a second, then a burst of more than
// maxBatch (a relist): the burst must not sit in memory until the flow's
// last change's hold ends.
func TestBurstHoldFullBatchWakesRun(t *testing.T) {
	s, c, ran := committerWith(t, filepath.Join(t.TempDir(), "state.db"), &bytes.Buffer{}, CommitterOptions{Gather: 10 * time.Millisecond, BurstHold: 80 * time.Millisecond})
	defer func() { c.Close(); <-ran; _ = s.Close() }()
	var wg sync.WaitGroup
	reviewFlow(c, sustainedN-1, 4*time.Millisecond, &wg)
	hold := headHold(c)
	for k := 0; k < 3*sustainedN && time.Until(hold) < 40*time.Millisecond; k++ {
		reviewFlow(c, 1, 4*time.Millisecond, &wg)
		hold = headHold(c)
	}
	if time.Until(hold) < 30*time.Millisecond {
		t.Skipf("the flow's last change is held only %s more (slow machine)", time.Until(hold))
	}
	const n = maxBatch + 44
	var first atomic.Int64 // when the burst's first change landed, ns since start
	start := time.Now()
	for i := range n {
		wg.Add(1)
		c.Submit(0, func(*Tx) error { return nil }, func(error) {
			if i == 0 {
				first.Store(int64(time.Since(start)))
			}
			wg.Done()
		})
	}
	burst := time.Since(start)
	var lastHold time.Duration // the burst's last change's own hold
	c.mu.Lock()
	if k := len(c.waiting); k > 0 {
		lastHold = c.waiting[k-1].hold.Sub(start) - burst
	}
	c.mu.Unlock()
	waitDone(t, "the burst", &wg)
	t.Logf("the burst's last change was held by itself only %s past the burst", lastHold.Round(time.Microsecond))
	landed := time.Duration(first.Load())
	t.Logf("a burst of %d submitted in %s behind a change held until +%s; its first landed at +%s", n, burst.Round(time.Microsecond), hold.Sub(start).Round(time.Millisecond), landed.Round(time.Millisecond))
	if start.Add(landed).After(hold) {
		t.Errorf("%d changes (more than maxBatch %d) waited %s, until the held head's hold ended (+%s), before Run took them: submit() does not wake Run when maxBatch is reached", n, maxBatch, landed.Round(time.Millisecond), hold.Sub(start).Round(time.Millisecond))
	}
}

// Flush returns once what came before it is applied: during a sustained flow
// its no-op is itself counted and held (up to BurstHold), and so is what waits
// before it. Before BurstHold it waited at most Gather (10ms).
func TestBurstHoldFlushIsPrompt(t *testing.T) {
	s, c, ran := committerWith(t, filepath.Join(t.TempDir(), "state.db"), &bytes.Buffer{}, CommitterOptions{Gather: 10 * time.Millisecond, BurstHold: 80 * time.Millisecond})
	defer func() { c.Close(); <-ran; _ = s.Close() }()
	var wg sync.WaitGroup
	reviewFlow(c, sustainedN-1, 4*time.Millisecond, &wg)
	for k := 0; k < 3*sustainedN && time.Until(headHold(c)) < 40*time.Millisecond; k++ {
		reviewFlow(c, 1, 4*time.Millisecond, &wg)
	}
	hold := headHold(c)
	t.Logf("the head is held %s more", time.Until(hold).Round(time.Millisecond))
	start := time.Now()
	c.Flush()
	took := time.Since(start)
	waitDone(t, "the flow", &wg)
	t.Logf("Flush after a flow of 250 a second took %s", took.Round(time.Millisecond))
	// Did it wait the head's hold out? (A commit of its own may take a
	// while on a loaded machine; the head's hold is 40ms or more away.)
	if !hold.IsZero() && start.Add(took).After(hold) {
		t.Errorf("Flush after a sustained flow took %s: it waits out BurstHold (its own no-op is held as part of the flow)", took.Round(time.Millisecond))
	}
}

// Close applies what waits at once, holds or not, and Run returns.
func TestBurstHoldCloseDoesNotWaitOutHolds(t *testing.T) {
	s, c, ran := committerWith(t, filepath.Join(t.TempDir(), "state.db"), &bytes.Buffer{}, CommitterOptions{Gather: 10 * time.Millisecond, BurstHold: 80 * time.Millisecond})
	defer func() { _ = s.Close() }()
	var wg sync.WaitGroup
	reviewFlow(c, sustainedN+8, 4*time.Millisecond, &wg)
	hold := headHold(c)
	start := time.Now()
	c.Close()
	<-ran
	took := time.Since(start)
	waitDone(t, "the flow", &wg)
	t.Logf("Close with the head held %s more took %s", time.Until(hold)+took, took)
	if !hold.IsZero() && start.Add(took).After(hold) {
		t.Errorf("Close took %s: it waited out the head's hold", took)
	}
}

// Several goroutines submit sustained flows (informers of several
// resources) to a carrier with Gather and BurstHold carrying a rider's
// marks, while the file now and then refuses commits: each goroutine's
// changes land in the order it submitted them, each once, none lost; no
// change waits much past its hold plus commits when the file takes them.
func TestBurstHoldConcurrentFlowsKeepOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	quiet := slog.New(slog.DiscardHandler)
	var refusing atomic.Bool
	var refusals atomic.Int64
	c := NewCommitter(s, CommitterOptions{Logger: quiet, Failed: func(error) { refusals.Add(1) }, Gather: 10 * time.Millisecond, BurstHold: 80 * time.Millisecond})
	r := NewCommitter(s, CommitterOptions{Logger: quiet, What: "delivery marks", Linger: 30 * time.Millisecond})
	cran, rran := runCarrying(c, r)

	const G = 4
	var (
		mu      sync.Mutex
		landed  [G][]int // per goroutine, the index of each change in landing order
		markSeq []int    // marks, in landing order
		wg      sync.WaitGroup
		worst   time.Duration
		limitMu sync.Mutex
		lift    func()
	)
	payload := bytes.Repeat([]byte("x"), 4000)
	var markN atomic.Int64
	var markMu sync.Mutex
	deadline := time.Now().Add(2 * time.Second)
	var gs sync.WaitGroup
	for g := range G {
		gs.Add(1)
		go func() {
			defer gs.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				wg.Add(1)
				at := time.Now()
				c.Submit(len(payload), func(tx *Tx) error {
					if err := tx.Put(Resource{Group: "g", Resource: "r"}, fmt.Sprint("o", g, "-", i%20), &Record{Name: "o", ResourceVersion: fmt.Sprint(i)}); err != nil {
						return err
					}
					_, err := tx.Enqueue("out", "k", payload)
					return err
				}, func(err error) {
					defer wg.Done()
					if err != nil {
						t.Errorf("change %d/%d: %v", g, i, err)
						return
					}
					d := time.Since(at)
					mu.Lock()
					landed[g] = append(landed[g], i)
					if !refusing.Load() {
						worst = max(worst, d)
					}
					mu.Unlock()
					if i%3 == 0 {
						wg.Add(1)
						markMu.Lock()
						m := int(markN.Add(1))
						r.Later(func(*Tx) error { return nil }, func(err error) {
							defer wg.Done()
							if err != nil {
								t.Errorf("mark %d: %v", m, err)
							}
							mu.Lock()
							markSeq = append(markSeq, m)
							mu.Unlock()
						})
						markMu.Unlock()
					}
				})
				time.Sleep(time.Duration(2+(i+g)%5) * time.Millisecond) // ~4ms apart each: ~1 000 a second in all
			}
		}()
	}
	// Refuse commits now and then.
	go func() {
		for k := 0; time.Now().Before(deadline.Add(-300 * time.Millisecond)); k++ {
			time.Sleep(150 * time.Millisecond)
			limitMu.Lock()
			if lift == nil {
				fi, err := os.Stat(path)
				if err == nil {
					refusing.Store(true)
					lift = testos.LimitFileSize(t, fi.Size()/2)
				}
			} else {
				lift()
				lift = nil
			}
			limitMu.Unlock()
		}
		limitMu.Lock()
		if lift != nil {
			lift()
			lift = nil
		}
		limitMu.Unlock()
	}()
	gs.Wait()
	time.Sleep(400 * time.Millisecond)
	limitMu.Lock()
	if lift != nil {
		lift()
		lift = nil
	}
	limitMu.Unlock()
	waitDone(t, "every change", &wg)
	c.Close()
	r.Close()
	<-cran
	<-rran
	total := 0
	for g := range G {
		total += len(landed[g])
		for k, i := range landed[g] {
			if i != k {
				t.Fatalf("goroutine %d: its change %d landed %d-th", g, i, k)
			}
		}
	}
	for k := 1; k < len(markSeq); k++ {
		if markSeq[k] < markSeq[k-1] {
			t.Fatalf("mark %d landed after mark %d", markSeq[k-1], markSeq[k])
		}
	}
	for name, cm := range map[string]*Committer{"carrier": c, "rider": r} {
		if n, b := cm.Pending(); n != 0 || b != 0 {
			t.Errorf("the %s counts %d pending (%d bytes)", name, n, b)
		}
	}
	t.Logf("%d changes, %d marks, %d refusals, longest wait before the first refusal %s", total, len(markSeq), refusals.Load(), worst)
	if refusals.Load() == 0 {
		t.Error("no commit was refused: refusals not tested")
	}
}

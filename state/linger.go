package state

import (
	"math"
	"slices"
	"time"
)

// Changes that may wait (a delivery's done mark: lost in a crash, it only
// makes the delivery happen again) need no transaction of their own: Later
// lets them linger until a transaction is made anyway, theirs or a carrier's
// (Carry), and commits them by itself only once they have lingered
// CommitterOptions.Linger. While events flow, their marks cost no fsync.

// Later queues fn as Submit does (size 0), but lets it linger: it is applied
// with the next transaction this committer or its carrier makes, or by a
// transaction of its own once it has waited the committer's Linger. Flush and
// Close apply it at once, as every change before them.
func (c *Committer) Later(fn func(*Tx) error, after func(error)) {
	cm := commit{size: commitOverhead, fn: fn, after: after}
	if c.opts.Linger > 0 {
		cm.due = time.Now().Add(c.opts.Linger)
	}
	c.submit(cm)
}

// Carry makes every transaction of c carry what waits in rider, submitted
// with Later, up to its first change that was not: rider's changes still land
// in the order they were submitted (rider applies none while c holds some).
// A transaction of c's that the file refuses gives them back to rider, which
// commits them by itself meanwhile. Call it before Run.
func (c *Committer) Carry(rider *Committer) {
	c.rider = rider
}

// lend hands a carrier what lingers at the head of c's queue, unless c is
// applying a batch of its own or has lent some already (then they are left
// to Run or to the next carrier's transaction). c may be nil.
func (c *Committer) lend() []commit {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.applying || c.carried > 0 || c.closed {
		return nil
	}
	n := 0
	for n < len(c.waiting) && n < maxBatch && !c.waiting[n].due.IsZero() {
		n++
	}
	if n == 0 {
		return nil
	}
	out := c.takeLocked(n)
	c.applying = false // the carrier applies them
	for i := range out {
		out[i].owner = c
	}
	c.carried = n
	return out
}

// returnCarried gives what batch carries (lent, at its head) back to the
// committer it came from, and returns the rest: a transaction the file
// refused is retried without them.
func returnCarried(batch []commit) []commit {
	n := 0
	for n < len(batch) && batch[n].owner != nil {
		n++
	}
	if n > 0 {
		batch[0].owner.giveBack(batch[:n])
	}
	return batch[n:]
}

// giveBack puts changes a carrier took, whose transaction the file refused,
// back at the head of c's queue, due at once: a transaction of c's own (a
// mark only deletes: it seldom needs room) may land while the carrier's waits
// for the disk.
func (c *Committer) giveBack(cms []commit) {
	now := time.Now()
	back := slices.Clone(cms)
	for i := range back {
		back[i].owner, back[i].due = nil, now
	}
	c.mu.Lock()
	c.waiting = slices.Concat(back, c.waiting)
	c.carried -= len(back)
	c.mu.Unlock()
	c.signal()
}

// carriedDone counts done one of c's changes that a carrier finished, and
// wakes Run once the carrier holds none of them any more.
func (c *Committer) carriedDone(cm commit) {
	c.mu.Lock()
	c.pendingN--
	c.pendingBytes -= cm.size
	c.carried--
	last := c.carried == 0
	c.mu.Unlock()
	if last {
		c.signal()
	}
}

// applied notes that Run finished its batch.
func (c *Committer) applied() {
	c.mu.Lock()
	c.applying = false
	c.mu.Unlock()
}

// burstStreak is how many changes in a row, each within Gather of the one
// before, make a burst. Fewer would take a steady flow for one: at 100
// changes a second with exponential gaps (independent objects' updates) and
// Gather 10ms, a gap is shorter than Gather 63% of the time, so two in a row
// held a third of the changes, and eight in a row hold 2.5%; a real burst
// (1 000 a second) is one after eight changes.
const burstStreak = 8

// sustainedN and sustainedRate say when changes come fast enough, for long
// enough, to be held (BurstHold): the last sustainedN came within
// sustainedN/sustainedRate (600ms), and the gaps' moving average, over about
// gapWeight changes, is 1/sustainedRate or less. holdN is how many changes a
// held one waits for: it is held as long as holdN take to come at the rate of
// the last sustainedN (at most 16/160 of a second, 100ms, and BurstHold; 16ms
// at 1 000 a second). With exponential gaps (independent objects' updates,
// TestBurstHoldFollowsTheRate) a flow of 100 a second is held at about one
// change in 25 000, one of 120 at one in 400, one of 150 at a fifth of its
// changes, one of 200 at 83% and one of 250 at 97%; a burst of 1 000 a second
// once its first 96 changes (96ms) came, Gather holding them meanwhile.
// After a burst (a relist's), for the 600ms in which its changes are still
// among the last sustainedN, only the average stands between a slower flow
// and a hold: a flow of changes 14ms apart is held for a few changes, under
// 15ms (TestBurstHoldLetsGoAfterABurst); one of 100 a second with exponential
// gaps, whose average dips under 1/160 s now and then, at about a fifth of
// those 600ms' changes, one in twenty for more than 15ms, up to BurstHold
// (TestBurstHoldLetsAPoissonFlowGoAfterABurst); none after them.
const (
	sustainedN    = 96
	sustainedRate = 160 // changes a second
	holdN         = 16
	gapWeight     = 8
)

// gather returns when a change submitted now may be committed at the
// earliest (gatherAt).
func (c *Committer) gather() time.Time {
	if c.opts.Gather <= 0 && c.opts.BurstHold <= 0 {
		return time.Time{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gatherAt(time.Now()) // read under the lock: the ring stays in order
}

// gatherAt is gather for a change submitted at now: zero, unless it ends a
// streak of burstStreak changes each within Gather of the one before (a
// burst, not the chance of a steadier flow: then Gather after now), or the
// last sustainedN changes came at sustainedRate or faster (then as long as
// holdN changes take to come at their rate, at most BurstHold); the later
// of the two when both. c.mu is held.
func (c *Committer) gatherAt(now time.Time) time.Time {
	gap := time.Duration(math.MaxInt64) // since the change before: none yet
	if c.submitted > 0 {
		gap = now.Sub(c.recent[(c.submitted-1)%sustainedN])
	}
	c.recent[c.submitted%sustainedN] = now
	c.submitted++
	var hold time.Time
	if c.opts.Gather > 0 {
		if gap < c.opts.Gather {
			c.streak++
		} else {
			c.streak = 0
		}
		if c.streak >= burstStreak {
			hold = now.Add(c.opts.Gather)
		}
	}
	if c.opts.BurstHold > 0 {
		if c.submitted > 1 {
			c.gapAvg += (gap - c.gapAvg) / gapWeight
		}
		// The oldest of the last sustainedN, this change included.
		oldest := c.recent[c.submitted%sustainedN]
		if span := now.Sub(oldest); c.submitted >= sustainedN && span <= sustainedN*time.Second/sustainedRate &&
			c.gapAvg <= time.Second/sustainedRate {
			wait := span * holdN / (sustainedN - 1)
			hold = latest(hold, now.Add(min(c.opts.BurstHold, wait)))
		}
	}
	return hold
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// waitUntil waits until due, or until Run is woken.
func (c *Committer) waitUntil(due time.Time) {
	t := time.NewTimer(time.Until(due))
	defer t.Stop()
	select {
	case <-c.wake:
	case <-t.C:
	}
}

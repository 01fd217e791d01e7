package state

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// ErrStopped is what a change submitted after Close gets.
var ErrStopped = errors.New("dynwatch is stopping")

// ErrGivenUp is wrapped by the error of a change given up unwritten: the file
// refused commits when dynwatch stopped, or while too much waited in memory.
// The committer has logged it once, with the count; the records on disk
// predate the change, so the next start's comparison finds it.
var ErrGivenUp = errors.New("not written: the state file refuses commits")

// maxBatch bounds how many commits share one transaction.
const maxBatch = 256

// Backoff between attempts at a transaction the file refused.
const (
	firstRetry = 100 * time.Millisecond
	maxRetry   = 5 * time.Second
)

// Committer applies changes to a Store in the order they were submitted, as
// many as are waiting in one transaction (group commit): the submitter never
// waits for the disk, and one change's parts still land together or not at all.
// With Gather, a burst waits a little to share a transaction; changes
// submitted with Later linger for one to ride in (linger.go).
//
// A transaction the file refuses (disk full, file too large, read-only) is
// tried again, with backoff, until it lands: nothing submitted after it is
// applied before it, so no object's record moves past an event that is not on
// disk. Meanwhile later changes wait in memory (Submit never blocks: not an
// informer, nor a reload holding its lock), up to MaxPendingBytes (past it the
// committer stops: see Submit), and Err says why.
type Committer struct {
	store *Store
	opts  CommitterOptions
	// wake tells Run that changes are waiting or that Close was called.
	wake chan struct{}
	// stopping is closed by Close: a commit the file refuses is then given up
	// rather than retried.
	stopping chan struct{}
	stopOnce sync.Once

	mu      sync.Mutex
	waiting []commit // submitted, not yet taken by Run
	closed  bool     // Close was called (or the bound was reached): later submissions are refused
	// pending counts what was submitted and is not done yet (waiting or in
	// Run's batch): changes and their bytes, as Submit was told.
	pendingN     int
	pendingBytes int64
	// overflow, once the bound was reached, is why the committer stopped.
	overflow *OverflowError
	// urgent counts the waiting changes not submitted with Later: while
	// there is none, Run lets the waiting ones linger (see linger.go).
	urgent int
	// applying: Run has taken a batch and not finished it; carried counts
	// the changes a carrier took (their transaction is the carrier's).
	// Either keeps the other from taking changes, so that they land in
	// the order they were submitted.
	applying bool
	carried  int
	// recent holds when the last sustainedN changes were submitted, a ring
	// (with Gather or BurstHold); submitted counts them all. streak is how
	// many came in a row each within Gather of the one before (with
	// Gather).
	recent    [sustainedN]time.Time
	submitted int
	streak    int
	// gapAvg is a moving average of the gaps between changes, over about
	// gapWeight of them (with BurstHold).
	gapAvg time.Duration
	// flushes counts the waiting changes of Flush calls.
	flushes int
	// rider is the committer whose lingering changes this one's
	// transactions carry (Carry).
	rider *Committer

	errMu   sync.Mutex
	failing error     // the last refusal while commits fail, else nil
	since   time.Time // when they started failing
	warned  time.Time // when that was last logged
}

// CommitterOptions configure a Committer.
type CommitterOptions struct {
	// Logger says when commits fail and when they land again. Default:
	// slog.Default().
	Logger *slog.Logger
	// Failed, when set, is called for every transaction the file refused.
	Failed func(error)
	// MaxPendingBytes bounds what may wait in memory while the file refuses
	// commits (see Submit). Default: DefaultMaxPendingBytes.
	MaxPendingBytes int64
	// Overflow, when set, is called once when that bound is reached: the
	// committer has then stopped as if closed, and the caller should stop.
	Overflow func(*OverflowError)
	// What names the changes in logs: "events" by default.
	What string
	// Gather, when set, lets changes that come in a burst share a
	// transaction (two fdatasyncs) even when the file could take them one
	// by one: a change that ends a streak of burstStreak changes each
	// within Gather of the one before is committed no sooner than Gather
	// after it was submitted, with what came meanwhile; any other at once
	// (a steady 100 a second is nearly never held). Zero:
	// every change is committed as soon as the transaction before it is.
	Gather time.Duration
	// BurstHold, when set, lets changes share a transaction while they
	// come at sustainedRate (160 a second) or faster, as measured over the
	// last sustainedN (96) of them (linger.go): each is then committed no
	// sooner than holdN (16) more take to come at that rate, and at most
	// BurstHold after it was submitted, so that a flow of 250 a second
	// takes a transaction (two fdatasyncs) per 14 changes or so instead of
	// one per two. A flow of 100 a second with exponential gaps is held at
	// about one change in 25 000, one of 120 at one in 400; from 150 a
	// second on, a growing share; in the 600ms after a burst, a slower
	// flow's changes now and then (linger.go). Zero: only Gather holds.
	BurstHold time.Duration
	// Linger is how long a change submitted with Later may wait for a
	// transaction to share (a carrier's, see Carry, or one a change
	// submitted after it makes) before Run commits it by itself. Zero: Later
	// is Submit.
	Linger time.Duration
}

type commit struct {
	// size is what Submit was told, plus commitOverhead.
	size int64
	// fn makes the change; it may run more than once (after its transaction
	// failed), so it builds what it hands on afresh each run.
	fn func(*Tx) error
	// after runs once fn's transaction committed (err nil) or failed for good.
	after func(err error)
	// due, for a change submitted with Later, is when it has lingered
	// long enough; zero for any other.
	due time.Time
	// hold, for a change that came in a burst (see gather), is
	// when its commit may start at the earliest; zero for any other.
	hold time.Time
	// flush marks Flush's change: while one waits, what waits is taken
	// at once, holds or not.
	flush bool
	// owner is the committer the change was submitted to, when a carrier
	// took it; nil when it is the one applying it.
	owner *Committer
}

// NewCommitter returns a committer for s; Run applies what is submitted.
func NewCommitter(s *Store, opts CommitterOptions) *Committer {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxPendingBytes <= 0 {
		opts.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if opts.What == "" {
		opts.What = "events"
	}
	return &Committer{store: s, opts: opts, wake: make(chan struct{}, 1), stopping: make(chan struct{})}
}

// Submit queues fn; after runs once fn's transaction committed (nil) or failed
// for good. fn may run more than once (its transaction failed, or another
// change of its batch did), so it builds what it hands on to after afresh
// each run: what after reads is the last run's.
// size is about how many bytes the change holds in memory (the event's
// objects). After Close, after gets ErrStopped and fn never runs.
//
// While the file refuses commits, what waits is bounded by MaxPendingBytes: a
// change that would pass it stops the committer instead (see OverflowError):
// after gets an error that wraps ErrGivenUp, as do everything still waiting
// and every later change (fn never runs). A change submitted while nothing waits is
// taken whatever its size.
func (c *Committer) Submit(size int, fn func(*Tx) error, after func(error)) {
	c.submit(commit{size: int64(size) + commitOverhead, fn: fn, after: after, hold: c.gather()})
}

func (c *Committer) submit(cm commit) {
	c.mu.Lock()
	if c.closed {
		err := ErrStopped
		if c.overflow != nil {
			err = fmt.Errorf("%w: %w", ErrGivenUp, c.overflow)
		}
		c.mu.Unlock()
		cm.after(err)
		return
	}
	if oe := c.overflows(cm.size); oe != nil {
		c.stopOverflowing(oe)
		cm.after(fmt.Errorf("%w: %w", ErrGivenUp, oe))
		return
	}
	c.waiting = append(c.waiting, cm)
	c.pendingN++
	c.pendingBytes += cm.size
	if cm.due.IsZero() {
		c.urgent++
	}
	if cm.flush {
		c.flushes++
	}
	// A change held or lingering behind others needs no wake-up: Run
	// looks at the first waiting change's time (or at once when the first
	// change that does not linger comes), unless a full batch waits or a
	// Flush does, which are taken at once.
	wake := len(c.waiting) == 1 || len(c.waiting) == maxBatch || cm.flush ||
		cm.due.IsZero() && (cm.hold.IsZero() || c.urgent == 1)
	c.mu.Unlock()
	if wake {
		c.signal()
	}
}

func (c *Committer) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Close lets Run apply what was submitted and return; later submissions are
// refused. A commit that the file refuses from then on is given up with what
// follows it: the records on disk predate those events, so the next start's
// comparison finds them.
func (c *Committer) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.stopOnce.Do(func() { close(c.stopping) })
	c.signal()
}

// Flush returns once every change submitted before it has been applied: it
// has them committed at once, however long they were to wait (Gather,
// BurstHold, Linger), and is not counted as part of a flow.
func (c *Committer) Flush() {
	done := make(chan struct{})
	c.submit(commit{size: commitOverhead, fn: func(*Tx) error { return nil }, after: func(error) { close(done) }, flush: true})
	<-done
}

// Err returns why commits fail while they do, else nil.
func (c *Committer) Err() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return c.failing
}

// Run applies commits until Close, then returns once it has applied (or given
// up) what was submitted before.
func (c *Committer) Run() {
	for {
		batch, closed, due := c.take()
		switch {
		case len(batch) > 0:
			if rest, cause := c.apply(append(c.rider.lend(), batch...)); cause != nil {
				c.giveUp(rest, cause)
				return
			}
			c.applied()
		case closed:
			return
		case !due.IsZero():
			c.waitUntil(due)
		default:
			<-c.wake
		}
	}
}

// take returns up to maxBatch of the waiting changes, in order, and whether
// Close was called; nothing (and when to look again, if not when woken)
// while a carrier holds some of them or they linger.
func (c *Committer) take() ([]commit, bool, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.carried > 0 {
		return nil, false, time.Time{} // the carrier wakes Run once they landed
	}
	if len(c.waiting) == 0 {
		return nil, c.closed, time.Time{}
	}
	if !c.closed && c.flushes == 0 {
		first, now := c.waiting[0], time.Now()
		if c.urgent == 0 && now.Before(first.due) {
			return nil, false, first.due
		}
		if now.Before(first.hold) && len(c.waiting) < maxBatch {
			return nil, false, first.hold
		}
	}
	return c.takeLocked(len(c.waiting)), c.closed, time.Time{}
}

// takeLocked takes up to maxBatch of the first n waiting changes for a
// transaction. c.mu is held.
func (c *Committer) takeLocked(n int) []commit {
	n = min(n, maxBatch)
	batch := slices.Clone(c.waiting[:n])
	for _, cm := range batch {
		if cm.due.IsZero() {
			c.urgent--
		}
		if cm.flush {
			c.flushes--
		}
	}
	clear(c.waiting[:n]) // what was taken is not kept alive by the queue
	c.waiting = c.waiting[n:]
	if len(c.waiting) == 0 {
		c.waiting = nil // let the backing array go
	}
	c.applying = true
	return batch
}

// apply commits batch. A change that fails by itself is left out (its after
// gets the error) and the others are committed without it; a transaction the
// file refuses is tried again with backoff. It returns the refusal when the
// file refused it after Close (or once the bound was reached), with what is
// left of batch, to be given up.
func (c *Committer) apply(batch []commit) ([]commit, error) {
	delay := firstRetry
	for len(batch) > 0 {
		bad := -1
		err := c.store.Update(func(tx *Tx) error {
			for i, cm := range batch {
				if err := cm.fn(tx); err != nil {
					bad = i
					return err
				}
			}
			return markRun(tx.tx)
		})
		switch {
		case err == nil:
			c.landed()
			for _, cm := range batch {
				c.finish(cm, nil)
			}
			return nil, nil
		case bad >= 0:
			c.finish(batch[bad], err)
			batch = slices.Delete(batch, bad, bad+1)
			continue
		}
		c.refused(err)
		batch = returnCarried(batch)
		select {
		case <-c.stopping:
			return batch, err
		case <-time.After(delay):
		}
		delay = min(2*delay, maxRetry)
	}
	return nil, nil
}

// finish runs cm's after and counts it done, by the committer it was
// submitted to.
func (c *Committer) finish(cm commit, err error) {
	cm.after(err)
	if cm.owner != nil {
		cm.owner.carriedDone(cm)
		return
	}
	c.mu.Lock()
	c.pendingN--
	c.pendingBytes -= cm.size
	c.mu.Unlock()
}

// giveUp fails batch (refused with cause) and what is still submitted,
// without trying it: once one commit is given up, none after it may land (it
// could move a record past it). Close has been called (or the bound reached),
// so nothing more comes. It says so in one line, with the count.
func (c *Committer) giveUp(batch []commit, cause error) {
	c.mu.Lock()
	rest := c.waiting
	c.waiting = nil
	n, bytes, oe := c.pendingN, c.pendingBytes, c.overflow
	c.mu.Unlock()
	err := fmt.Errorf("%w: %w", ErrGivenUp, cause)
	if oe != nil {
		err = fmt.Errorf("%w: %w", ErrGivenUp, oe)
	}
	c.opts.Logger.Error("state: stopped while the state file refuses commits; what was not written fires as a replay after the next start (the next start compares the listed objects with the records on disk)",
		"what", c.opts.What, "notWritten", n, "bytes", bytes, "err", cause)
	for _, cm := range batch {
		c.finish(cm, err)
	}
	for _, cm := range rest {
		c.finish(cm, err)
	}
}

// refused notes a transaction the file refused: logged at WARN at first, at
// ERROR once a minute while it goes on.
func (c *Committer) refused(err error) {
	if c.opts.Failed != nil {
		c.opts.Failed(err)
	}
	c.errMu.Lock()
	defer c.errMu.Unlock()
	now := time.Now()
	switch {
	case c.failing == nil:
		c.since, c.warned = now, now
		c.opts.Logger.Warn("state: the state file refuses commits; retrying, events wait in memory meanwhile", "err", err)
	case now.Sub(c.warned) >= time.Minute:
		c.warned = now
		c.opts.Logger.Error("state: the state file still refuses commits; events wait in memory", "for", now.Sub(c.since).Round(time.Second).String(), "err", err)
	}
	c.failing = err
}

// landed notes a commit that landed, and says so once commits had failed.
func (c *Committer) landed() {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	if c.failing != nil {
		c.opts.Logger.Info("state: commits land again", "after", time.Since(c.since).Round(time.Millisecond).String())
		c.failing = nil
	}
}

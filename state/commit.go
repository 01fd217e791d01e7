package state

import (
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// ErrStopped is what a change submitted after Close gets.
var ErrStopped = errors.New("dynwatch is stopping")

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
//
// A transaction the file refuses (disk full, file too large, read-only) is
// tried again, with backoff, until it lands: nothing submitted after it is
// applied before it, so no object's record moves past an event that is not on
// disk. Meanwhile later changes wait in memory (Submit never blocks: not an
// informer, nor a reload holding its lock), and Err says why.
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
	closed  bool     // Close was called: later submissions are refused

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
}

type commit struct {
	// fn makes the change; it may run more than once (after its transaction
	// failed), so it resets whatever it captures.
	fn func(*Tx) error
	// after runs once fn's transaction committed (err nil) or failed for good.
	after func(err error)
}

// NewCommitter returns a committer for s; Run applies what is submitted.
func NewCommitter(s *Store, opts CommitterOptions) *Committer {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Committer{store: s, opts: opts, wake: make(chan struct{}, 1), stopping: make(chan struct{})}
}

// Submit queues fn; after runs once fn's transaction committed (nil) or failed
// for good. fn may run more than once, so it must reset whatever it captures.
// After Close, after gets ErrStopped and fn never runs.
func (c *Committer) Submit(fn func(*Tx) error, after func(error)) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		after(ErrStopped)
		return
	}
	c.waiting = append(c.waiting, commit{fn: fn, after: after})
	c.mu.Unlock()
	c.signal()
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

// Flush returns once every change submitted before it has been applied.
func (c *Committer) Flush() {
	done := make(chan struct{})
	c.Submit(func(*Tx) error { return nil }, func(error) { close(done) })
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
		batch, closed := c.take()
		switch {
		case len(batch) > 0:
			if !c.apply(batch) {
				c.giveUp()
				return
			}
		case closed:
			return
		default:
			<-c.wake
		}
	}
}

// take returns up to maxBatch of the waiting changes, in order, and whether
// Close was called.
func (c *Committer) take() ([]commit, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := min(len(c.waiting), maxBatch)
	batch := slices.Clone(c.waiting[:n])
	clear(c.waiting[:n]) // what was taken is not kept alive by the queue
	c.waiting = c.waiting[n:]
	if len(c.waiting) == 0 {
		c.waiting = nil // let the backing array go
	}
	return batch, c.closed
}

// apply commits batch. A change that fails by itself is left out (its after
// gets the error) and the others are committed without it; a transaction the
// file refuses is tried again with backoff. It returns false when the file
// refused it after Close: the batch is then given up.
func (c *Committer) apply(batch []commit) bool {
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
			return nil
		})
		switch {
		case err == nil:
			c.landed()
			for _, cm := range batch {
				cm.after(nil)
			}
			return true
		case bad >= 0:
			batch[bad].after(err)
			batch = slices.Delete(batch, bad, bad+1)
			continue
		}
		c.refused(err)
		select {
		case <-c.stopping:
			c.opts.Logger.Error("state: stopping while the state file refuses commits; what was not written fires after the next start", "err", err)
			for _, cm := range batch {
				cm.after(err)
			}
			return false
		case <-time.After(delay):
		}
		delay = min(2*delay, maxRetry)
	}
	return true
}

// giveUp fails what is still submitted, without trying it: once one commit is
// given up, none after it may land (it could move a record past it). Close has
// been called, so nothing more comes.
func (c *Committer) giveUp() {
	c.mu.Lock()
	rest := c.waiting
	c.waiting = nil
	c.mu.Unlock()
	for _, cm := range rest {
		cm.after(ErrStopped)
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

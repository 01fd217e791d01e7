package state

import (
	"fmt"
	"time"
)

// DefaultMaxPendingBytes bounds what waits in memory while the state file
// refuses commits: about 15 000 updates of 2 KiB objects (each holds the new
// object and the old).
const DefaultMaxPendingBytes = 64 << 20

// commitOverhead is what one waiting change holds beyond the bytes Submit is
// told (the change, its closures, the event around the objects).
const commitOverhead = 256

// OverflowError is why a committer stopped: the file refused commits for
// Refused, and what waited in memory reached the bound.
type OverflowError struct {
	// For is how long the file has refused commits.
	For time.Duration
	// Events and Bytes are what waited (changes, one per event).
	Events int
	Bytes  int64
	// What names the changes ("events").
	What string
	// Err is the file's last refusal.
	Err error
}

func (e *OverflowError) Error() string {
	return fmt.Sprintf("the state file has refused commits for %s; %d %s (%d bytes) wait in memory; stopping: the next start compares the listed objects with the records on disk, so every change since the last commit fires as a replay: %v",
		e.For.Round(time.Second), e.Events, e.What, e.Bytes, e.Err)
}

// Unwrap returns the file's refusal.
func (e *OverflowError) Unwrap() error { return e.Err }

// Pending returns how many changes were submitted and are not done yet, and
// the bytes they hold (as Submit was told, plus a fixed overhead each).
func (c *Committer) Pending() (changes int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pendingN, c.pendingBytes
}

// overflows returns the error to stop with when a change of size would pass
// the bound while the file refuses commits, else nil. c.mu is held.
func (c *Committer) overflows(size int64) *OverflowError {
	if c.pendingN == 0 || c.pendingBytes+size <= c.opts.MaxPendingBytes {
		return nil
	}
	c.errMu.Lock()
	defer c.errMu.Unlock()
	if c.failing == nil {
		return nil // the file takes commits: what waits is Run's next batches
	}
	return &OverflowError{For: time.Since(c.since), Events: c.pendingN, Bytes: c.pendingBytes, What: c.opts.What, Err: c.failing}
}

// stopOverflowing stops the committer for oe: later submissions are refused,
// the refused transaction is given up with what waits, and the caller is told.
// c.mu is held; it is released.
func (c *Committer) stopOverflowing(oe *OverflowError) {
	c.closed = true
	c.overflow = oe
	c.mu.Unlock()
	c.opts.Logger.Error("state: "+oe.Error(), "limit", c.opts.MaxPendingBytes)
	c.stopOnce.Do(func() { close(c.stopping) })
	c.signal()
	if c.opts.Overflow != nil {
		c.opts.Overflow(oe)
	}
}

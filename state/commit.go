package state

import (
	"errors"
	"sync"
)

// ErrStopped is what a change submitted after Close gets.
var ErrStopped = errors.New("dynwatch is stopping")

// maxBatch bounds how many commits share one transaction.
const maxBatch = 256

// Committer applies changes to a Store in the order they were submitted, as
// many as are waiting in one transaction (group commit): the submitter never
// waits for the disk, and one change's parts still land together or not at all.
type Committer struct {
	store   *Store
	commits chan commit
	// closeMu guards closed: once Close is called, a late submission (a reload
	// racing the shutdown) is refused, not a panic.
	closeMu sync.RWMutex
	closed  bool
}

type commit struct {
	// fn makes the change; it may run twice (alone, after its batch failed),
	// so it resets whatever it captures.
	fn func(*Tx) error
	// after runs once fn's transaction committed (err nil) or failed.
	after func(err error)
}

// NewCommitter returns a committer for s; Run applies what is submitted.
func NewCommitter(s *Store) *Committer {
	return &Committer{store: s, commits: make(chan commit, 4*maxBatch)}
}

// Submit queues fn; after runs once fn's transaction committed (nil) or failed.
// fn may run twice (alone, after its batch failed), so it must reset whatever
// it captures. After Close, after gets ErrStopped and fn never runs.
func (c *Committer) Submit(fn func(*Tx) error, after func(error)) {
	c.closeMu.RLock()
	defer c.closeMu.RUnlock()
	if c.closed {
		after(ErrStopped)
		return
	}
	c.commits <- commit{fn: fn, after: after}
}

// Close lets Run apply what was submitted and return.
func (c *Committer) Close() {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.commits)
	}
}

// Flush returns once every change submitted before it has been applied.
func (c *Committer) Flush() {
	done := make(chan struct{})
	c.Submit(func(*Tx) error { return nil }, func(error) { close(done) })
	<-done
}

// Run applies commits until Close. If a batch fails, its commits are retried
// one by one, so that one bad change does not take the others with it.
func (c *Committer) Run() {
	for first := range c.commits {
		batch := c.gather(first)
		err := c.store.Update(func(tx *Tx) error {
			for _, cm := range batch {
				if err := cm.fn(tx); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil || len(batch) == 1 {
			for _, cm := range batch {
				cm.after(err)
			}
			continue
		}
		for _, cm := range batch {
			cm.after(c.store.Update(cm.fn))
		}
	}
}

// gather takes first and whatever else is waiting, up to maxBatch.
func (c *Committer) gather(first commit) []commit {
	batch := []commit{first}
	for len(batch) < maxBatch {
		select {
		case cm, ok := <-c.commits:
			if !ok {
				return batch
			}
			batch = append(batch, cm)
		default:
			return batch
		}
	}
	return batch
}

package dyninformer

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// handlerCalls makes the handler calls of one watch serial, the informer's
// and Replay's, and ends them: once stop has returned, no call is running and
// none starts, so nothing of a watch that Set stopped arrives after Set.
type handlerCalls struct {
	mu      sync.Mutex
	stopped bool
	// since is when the call in flight began (Unix ns), 0 between calls:
	// Status.Busy. It is read without mu, which the call holds.
	since atomic.Int64
}

// serial runs f as one handler call (after the call in flight, before the
// next; not at all once stopped) and reports whether it ran.
func (c *handlerCalls) serial(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return false
	}
	c.since.Store(time.Now().UnixNano())
	defer c.since.Store(0)
	f()
	return true
}

// stop waits for the call in flight, if any, and lets no other start.
func (c *handlerCalls) stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
}

// hand passes the events (nil ones skipped) to the handler in one call of
// e's serial calls; nothing once e has stopped.
func (m *Manager) hand(e *entry, evs ...*event.Event) {
	e.calls.serial(func() {
		for _, ev := range evs {
			if ev != nil {
				m.handler(e.watch.Key(), ev)
			}
		}
	})
}

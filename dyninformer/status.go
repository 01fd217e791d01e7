package dyninformer

import (
	"context"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// HasSynced reports whether every informer has finished its initial list and
// handed every object of it to the handler.
func (m *Manager) HasSynced() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.entries {
		if !hasSynced(e.ctrl) {
			return false
		}
	}
	return true
}

// KeySynced reports whether the informer of k has handed its whole initial list
// to the handler; ok is false when k is not watched.
func (m *Manager) KeySynced(k Key) (synced, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[k]
	if !ok {
		return false, false
	}
	return hasSynced(e.ctrl), true
}

// WaitForSync blocks until every informer has synced or ctx is done. It
// looks every 10ms, as the watcher's own sync report does: a sync is not
// rounded up by much.
func (m *Manager) WaitForSync(ctx context.Context) bool {
	return wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return m.HasSynced(), nil
	}) == nil
}

// Status is one watch's health, for /readyz and metrics.
type Status struct {
	Key Key
	// Synced: the initial list has been handed over.
	Synced bool
	// Err is the last error of a watch that has not synced (forbidden, not
	// served), nil if none.
	Err error
	// LastEvent is when the watch last delivered an event or a bookmark; zero
	// before the first.
	LastEvent time.Time
	// Busy is when the handler call in flight began; zero between calls.
	// While a call runs with 2000 changes or more queued behind it, the
	// watch is not read (controller.go), so LastEvent stands still: Busy
	// tells that stall from a watch the API server has stopped feeding.
	Busy time.Time
	// Objects is how many objects its cache holds now.
	Objects int
	// Listed is the resourceVersion of its informer's first list (the
	// snapshot a watch-list streamed, or a paged list's); "" before.
	Listed string
}

// Statuses returns the health of every watch, sorted by key.
func (m *Manager) Statuses() []Status {
	m.mu.Lock()
	out := make([]Status, 0, len(m.entries))
	for k, e := range m.entries {
		st := Status{Key: k, Synced: e.ctrl != nil && hasSynced(e.ctrl), Objects: len(e.store.ListKeys())}
		if ns := e.seen.Load(); ns > 0 {
			st.LastEvent = time.Unix(0, ns)
		}
		if ns := e.calls.since.Load(); ns > 0 {
			st.Busy = time.Unix(0, ns)
		}
		if rv := e.listed.Load(); rv != nil {
			st.Listed = *rv
		}
		if !st.Synced {
			e.mu.Lock()
			st.Err = e.watchErr
			e.mu.Unlock()
		}
		out = append(out, st)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Key.String(), b.Key.String()) })
	return out
}

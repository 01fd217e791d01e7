package watcher

import (
	"strings"
	"sync"
	"time"
)

// deletedCRDs notes the CRDs the CRD watch saw deleted: a resource that leaves
// discovery because its CRD went is gone, not flapping, so it keeps no records
// for vanishGrace, and created again it is a new resource whose objects all
// fire add. The CRD watch's handler notes them; a refresh of discovery takes
// them.
type deletedCRDs struct {
	mu sync.Mutex
	at map[groupResource]time.Time // when the delete was seen
}

type groupResource struct{ group, resource string }

// note notes the delete of the CRD named name (plural.group).
func (d *deletedCRDs) note(name string, now time.Time) {
	plural, group, ok := strings.Cut(name, ".")
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at == nil {
		d.at = map[groupResource]time.Time{}
	}
	d.at[groupResource{group, plural}] = now
}

// take returns, for a refresh of discovery, the resources whose CRD was
// deleted and that it no longer serves (served tells): their notes are used
// up. A note whose resource stays served (the CRD was created again before a
// refresh missed it) is dropped after grace.
func (d *deletedCRDs) take(served map[groupResource]bool, now time.Time, grace time.Duration) map[groupResource]bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	gone := map[groupResource]bool{}
	for gr, at := range d.at {
		switch {
		case !served[gr]:
			gone[gr] = true
			delete(d.at, gr)
		case now.Sub(at) >= grace:
			delete(d.at, gr)
		}
	}
	return gone
}

package action

import (
	"fmt"

	"github.com/dynwatch/dynwatch/event"
)

// delivery returns what an attempt at it sends: its delivery, or for a
// grouped delivery the group's, made at its first attempt (outside q.mu: it
// copies every member's payload) and kept for its retries. A group that
// cannot be made is a permanent failure.
func (q *Queue) delivery(it *item) (*event.Delivery, error) {
	q.mu.Lock()
	d := it.d
	q.mu.Unlock()
	if d != nil || it.u == nil || it.u.members == nil {
		return d, nil
	}
	d, err := event.NewGroupDelivery(it.u.labels, it.u.members)
	if err != nil {
		return nil, &Failure{Err: fmt.Errorf("make the grouped delivery: %w", err), Permanent: true}
	}
	q.mu.Lock()
	it.d = d
	q.mu.Unlock()
	return d, nil
}

// GroupEvents returns how many events wait in the queue's open groups.
func (q *Queue) GroupEvents() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.grp == nil {
		return 0
	}
	return q.grp.waiting
}

// Held returns, at one moment, the queue's depth (Len) and how many of
// those events wait in open groups (GroupEvents).
func (q *Queue) Held() (total, grouped int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.grp != nil {
		grouped = q.grp.waiting
	}
	return q.total, grouped
}

// Grouped reports whether the queue groups its deliveries.
func (q *Queue) Grouped() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.grp != nil && q.grp.opts != nil
}

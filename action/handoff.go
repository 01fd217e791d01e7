package action

// HandOff makes next the action's queue from now on: this queue's Run stops
// taking new attempts, lets those in flight finish, moves its backlog, in
// order, ahead of what next holds, and returns; later Enqueue calls go to next.
// next must not run before that: HandOff makes next's Run wait for it. A
// reload that changes an action's settings loses none of its backlog.
func (q *Queue) HandOff(next *Queue) {
	q.mu.Lock()
	q.successor = next
	q.setHeirLocked(next)
	q.mu.Unlock()
	next.mu.Lock()
	next.after = q.handedOff
	next.mu.Unlock()
	close(q.retire)
}

// Follow makes next's Run wait until this queue's has returned, without
// moving anything to next: for a queue whose backlog next gets from elsewhere
// (a durable queue's, read again from disk). This queue must be stopping.
func (q *Queue) Follow(next *Queue) {
	q.mu.Lock()
	q.setHeirLocked(next)
	q.mu.Unlock()
	next.mu.Lock()
	next.after = q.handedOff
	next.mu.Unlock()
}

// moveBacklog hands every queued delivery to the successor, each object's in
// order and ahead of any the successor already holds for it, and closes q.
func (q *Queue) moveBacklog() {
	q.mu.Lock()
	next := q.successor
	keepGroups := q.takeGroups(next)
	pending, from := q.pending, q.grp
	q.pending, q.ready, q.total, q.closed, q.grp = map[string][]*item{}, nil, 0, true, nil
	limit, accepted := q.limit.snapshot(), q.accepted
	q.mu.Unlock()
	moved := 0
	next.mu.Lock()
	next.limit.carry(limit)
	next.accepted = max(next.accepted, accepted) // the moved events' marks stay true
	if from != nil || next.grp != nil {
		moved = next.adopt(pending, from, keepGroups)
	} else {
		for key, list := range pending {
			if _, busy := next.pending[key]; !busy {
				next.ready = append(next.ready, key)
			}
			next.pending[key] = append(list, next.pending[key]...)
			next.total += len(list)
			moved += len(list)
		}
	}
	next.mu.Unlock()
	next.cond.Broadcast()
	if moved > 0 {
		q.log.Info("action changed: its backlog moves to the new settings, in order", "events", moved)
	}
}

// setHeirLocked makes next the queue whose sender takes over what q's sender
// still has in flight once q's Run ends; too late once it has ended (q's
// sender may be closed). q.mu is held.
func (q *Queue) setHeirLocked(next *Queue) {
	if !q.ended {
		q.heir = next
	}
}

// passOn hands q's sender to its heir's, if the heir's is a Heir: for the
// records a client still has in flight that an object's next record must not
// overtake. Run calls it once its attempts have ended.
func (q *Queue) passOn() {
	q.mu.Lock()
	heir := q.heir
	q.ended = true
	q.mu.Unlock()
	if heir == nil {
		return
	}
	if h, ok := heir.sender.(Heir); ok {
		h.Inherit(q.sender)
	}
}

package watcher

// An action's durable backlog belongs to its name: an action that a reload
// removes keeps what it had not delivered on disk, and a reload that adds the
// name again (the same run, or the next start: see pager.spillAll) delivers
// that backlog first, in order, before anything new. A renamed action is a
// removal and an addition.

// removedLocked notes the queue of an action a reload removed; s.mu is held.
func (s *actionSet) removedLocked(name string, qr *queueRun) {
	if s.durable != nil {
		s.removed[name] = qr
	}
}

// takeBacklogLocked makes qr, the queue of an action a reload adds, deliver
// first whatever its name has left on disk: the queue the name had (if a
// reload removed it, and it may still be draining) stops at once and qr
// starts only once it has, and the pager reads the name's durable queue again
// from its start, once the old queue's last marks are on disk (what it
// delivered is not read again). s.mu is held.
func (s *actionSet) takeBacklogLocked(name string, qr *queueRun) {
	if s.durable == nil {
		return
	}
	old := s.removed[name]
	if old == nil {
		s.durable.pager.restart(name, nil)
		return
	}
	delete(s.removed, name)
	// What old holds is on disk, and paged in again below: it stops and
	// moves nothing to qr (else qr would hold those deliveries twice, an
	// object's older events after its newer ones), and qr's Run waits for
	// old's to return, so no attempt overlaps. old's context is done
	// already (the reload that removed it).
	old.q.Halt()
	old.q.Follow(qr.q)
	ready := make(chan struct{})
	marks := s.durable.marks
	go func() {
		<-old.q.Stopped()
		marks.Flush() // old's marks, submitted before it stopped
		close(ready)
	}()
	s.durable.pager.restart(name, ready)
}

package action

// Stats counts what a queue did. All counts are since the queue was made.
type Stats struct {
	Enqueued  uint64 // accepted into the queue
	Delivered uint64 // delivered successfully
	Retries   uint64 // attempts after the first
	Failed    uint64 // gave up: retries exhausted or a permanent failure
	Dropped   uint64 // refused because the queue was full
	Abandoned uint64 // still queued when the shutdown grace period ended
	Outages   uint64 // times the action went down (its receiver failing)
	Peak      uint64 // the most deliveries queued at once, in flight included
	// Groups counts the grouped deliveries made; in a grouped queue the
	// other counts are of events (a grouped delivery of N counts N
	// delivered), but Retries, which counts attempts.
	Groups uint64
}

// Stats returns the queue's counters.
func (q *Queue) Stats() Stats {
	return Stats{
		Enqueued:  q.enqueued.Load(),
		Delivered: q.delivered.Load(),
		Retries:   q.retries.Load(),
		Failed:    q.failed.Load(),
		Dropped:   q.dropped.Load(),
		Abandoned: q.abandoned.Load(),
		Outages:   q.outages.Load(),
		Peak:      q.peak.Load(),
		Groups:    q.groups.Load(),
	}
}

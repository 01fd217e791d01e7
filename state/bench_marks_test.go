package state

import "time"

// benchCommitters returns the committers of events and of done marks, and how
// a delivery is marked done, as the watcher makes them: events that come
// in a burst share a commit for up to 10 ms (the watcher's commitGather), and
// marks linger (its markLinger) to ride in the events' commits.
func benchCommitters(s *Store) (commits, marks *Committer, markDone func(seq uint64, landed func())) {
	commits = NewCommitter(s, CommitterOptions{Gather: 10 * time.Millisecond, BurstHold: 80 * time.Millisecond})
	marks = NewCommitter(s, CommitterOptions{What: "delivery marks", Linger: 250 * time.Millisecond})
	commits.Carry(marks)
	return commits, marks, func(seq uint64, landed func()) {
		marks.Later(func(tx *Tx) error { return tx.Done("out", seq) }, func(error) { landed() })
	}
}

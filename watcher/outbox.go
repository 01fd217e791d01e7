package watcher

import (
	"errors"
	"log/slog"

	"github.com/dynwatch/dynwatch/action"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/state"
)

// outbox is the actions' durable queues as the pipeline uses them: a
// delivery is put in its action's queue on disk in the transaction that
// records its event, handed to memory once that is committed (offer), a
// window at a time (the pager), and removed from disk once its queue is done
// with it (actionOutbox.Done).
type outbox struct {
	pager *pager
	// marks removes done deliveries, in group commits of their own.
	marks *state.Committer
	log   *slog.Logger
}

// put writes the deliveries to their actions' durable queues in tx, and
// gives each its place there.
func (o *outbox) put(tx *state.Tx, rs []routed) error {
	for _, r := range rs {
		seq, err := tx.Enqueue(r.action, r.d.Key, r.d.JSON)
		if err != nil {
			return err
		}
		r.d.Seq = seq
	}
	return nil
}

// offer hands committed deliveries to their queues, or leaves them on disk
// for the pager to read (see pager.offer).
func (o *outbox) offer(rs []routed) { o.pager.offer(rs) }

var _ action.Outbox = actionOutbox{}

// of returns the named action's outbox, which its queue tells when it is done
// with a delivery.
func (o *outbox) of(action string) actionOutbox { return actionOutbox{action: action, o: o} }

// actionOutbox is one action's durable queue, as its action.Queue sees it:
// what the queue tells when it is done with a delivery.
type actionOutbox struct {
	action string
	o      *outbox
}

// Done removes a delivery that was delivered (or given up) from disk. It goes
// through a committer of its own, not behind the events' group commits: the
// window in which a crash makes a delivery happen again stays one fsync long,
// and marks that come together share it.
func (a actionOutbox) Done(d *event.Delivery) {
	if d.Seq == 0 {
		return
	}
	name, seq, id := a.action, d.Seq, d.Payload.ID
	a.o.marks.Submit(0, func(tx *state.Tx) error { return tx.Done(name, seq) }, func(err error) {
		if err != nil && !errors.Is(err, state.ErrGivenUp) { // given up: logged once, with the count
			a.o.log.Error("state: cannot mark a delivery done; it may be delivered again after a restart", "id", id, "err", err)
		}
	})
}

package watcher

import (
	"errors"
	"log/slog"
	"time"

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
	// marks removes done deliveries: they ride in the events' next
	// commit, or go in one of their own once they waited markLinger.
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

// markLinger is how long a done mark waits for an event's commit to ride in
// before it is committed by itself. A mark lost in a crash (kill -9, power)
// only makes its delivery happen again after the next start (at-least-once,
// with the same id): lingering widens that window from one commit to at most
// markLinger, and spares the file a transaction (two fdatasyncs) per event
// while events flow. A clean stop, the SIGTERM drain included, writes every
// mark (marks.Close).
const markLinger = 250 * time.Millisecond

// Done removes a delivery that was delivered (or given up) from disk: in the
// next commit of events (state.Committer.Carry), or in one of the marks' own
// once it has waited markLinger, with the marks that came meanwhile. An
// events' commit that the file refuses gives its marks back, and they are
// committed by themselves (a mark only deletes: it seldom needs the room the refused commit lacked).
func (a actionOutbox) Done(d *event.Delivery) {
	if d.Seq == 0 {
		return
	}
	name, seq, id := a.action, d.Seq, d.Payload.ID
	a.o.marks.Later(func(tx *state.Tx) error { return tx.Done(name, seq) }, func(err error) {
		if err != nil && !errors.Is(err, state.ErrGivenUp) { // given up: logged once, with the count
			a.o.log.Error("state: cannot mark a delivery done; it may be delivered again after a restart", "id", id, "err", err)
		}
	})
}

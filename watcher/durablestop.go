package watcher

import (
	"context"
	"errors"
	"fmt"

	"github.com/dynwatch/dynwatch/state"
)

// maxIDsLogged is how many ids of the events given up unwritten are logged (at
// DEBUG): the committer logs the count once, never a line per event.
const maxIDsLogged = 20

// notWritten counts an event given up unwritten (the file refused commits at
// the stop, or past the bound).
func (d *durable) notWritten(id string) {
	if n := d.givenUp.Add(1); n <= maxIDsLogged {
		d.log.Debug("state: event not written; it fires as a replay after the next start", "id", id)
	}
}

// overflowed stops the run: a committer reached its bound while the file
// refused commits, and has stopped.
func (d *durable) overflowed(oe *state.OverflowError) {
	if stop := d.stopRun.Load(); stop != nil {
		(*stop)(oe)
	}
}

// runContext returns the context of a run, which a committer that reaches its
// bound cancels (with its OverflowError as the cause).
func (d *durable) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, stop := context.WithCancelCause(ctx)
	d.stopRun.Store(&stop)
	return ctx, func() { stop(nil) }
}

// stopErr is what a run ends with when it stopped with events that are
// neither delivered nor on disk (the next start's comparison replays what
// changed), or because the bound was reached; else nil.
func (d *durable) stopErr(ctx context.Context) error {
	n := d.givenUp.Load()
	var oe *state.OverflowError
	switch {
	case errors.As(context.Cause(ctx), &oe):
		return fmt.Errorf("%w: %d not written: %w", ErrUndelivered, n, oe)
	case n > 0:
		return fmt.Errorf("%w: %d not written: the state file refused commits when dynwatch stopped", ErrUndelivered, n)
	}
	return nil
}

package action

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A JetStream stream drops a message whose Nats-Msg-Id it has seen within
// its duplicate window (2 minutes unless the stream says otherwise). A
// publish the stream stored but whose acknowledgement was lost (a timeout,
// a connection cut, a server restart) is retried; a retry that comes after
// the window, the gap being a backoff longer than it or an outage, is
// stored a second time. That is at least once, as everywhere; but an action
// whose retry.maxBackoff is longer than the window makes such gaps its
// everyday backoff, so it says so once, with the window, when it first
// hears from the stream.

// dupWindows learns, once per stream an action's messages land in, the
// stream's duplicate window, and warns when it is shorter than the action's
// retry.maxBackoff.
type dupWindows struct {
	js         jetstream.JetStream
	log        *slog.Logger
	maxBackoff time.Duration

	mu   sync.Mutex
	seen map[string]bool // streams looked at (or being looked at)
	// looking are the looks under way: each runs beside the deliveries,
	// never in one's path (a user refused the stream's info gets no answer
	// at all, and would hold that delivery for its whole timeout).
	looking sync.WaitGroup
}

func newDupWindows(js jetstream.JetStream, log *slog.Logger, maxBackoff time.Duration) *dupWindows {
	return &dupWindows{js: js, log: log, maxBackoff: maxBackoff, seen: map[string]bool{}}
}

// check looks at stream's duplicate window the first time a publish to it
// is acknowledged (the subject may be a template: the stream is known only
// then), within timeout, in a goroutine of its own: the publish has
// succeeded, and its Send returns now. A stream that cannot be read (no
// permission for its info: the server drops the request and nothing
// answers) is left alone, and docs/sinks.md ("NATS") says what the window means.
// Nil-safe: core NATS has no stream.
func (w *dupWindows) check(stream string, timeout time.Duration) {
	if w == nil || stream == "" {
		return
	}
	w.mu.Lock()
	seen := w.seen[stream]
	w.seen[stream] = true
	w.mu.Unlock()
	if seen {
		return
	}
	w.looking.Go(func() { w.look(stream, timeout) })
}

// look reads stream's duplicate window and warns when it is shorter than
// retry.maxBackoff. Closing the connection ends it at once.
func (w *dupWindows) look(stream string, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s, err := w.js.Stream(ctx, stream)
	if err != nil {
		w.log.Debug("could not read the stream's duplicate window", "stream", stream, "err", err)
		return
	}
	window := s.CachedInfo().Config.Duplicates
	if window > 0 && window < w.maxBackoff {
		w.log.Warn("the stream's duplicate window is shorter than retry.maxBackoff: a message stored whose acknowledgement was lost, retried after the window, is stored twice; consumers should drop duplicates by Nats-Msg-Id",
			"stream", stream, "duplicateWindow", window, "maxBackoff", w.maxBackoff)
	}
}

// wait returns once every look under way has ended (after the connection
// closes, at once). Nil-safe.
func (w *dupWindows) wait() {
	if w != nil {
		w.looking.Wait()
	}
}

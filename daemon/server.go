package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynwatch/dynwatch/dyninformer"
)

// serve starts the operations server on server.address, if set: /metrics,
// /healthz and /readyz. A port already in use is an error at start.
func (d *daemon) serve() (stop func(), err error) {
	srv := d.o.File.Config.Server
	if srv == nil || srv.Address == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", srv.Address)
	if err != nil {
		return nil, fmt.Errorf("server.address %s: %w (is another process using that port?)", srv.Address, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", d.metrics.Handler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		ready, body := d.ready(time.Now())
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = w.Write([]byte(body + d.readyShard()))
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("operations server stopped", "err", err)
		}
	}()
	d.log.Info("serving /metrics, /healthz and /readyz", "address", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		<-done
	}, nil
}

// reasonOf is what /readyz says of a failing watch: the API's reason
// (Forbidden, NotFound, …), never the error's text, which can hold the
// ServiceAccount's name and request URLs with their query, and /readyz answers
// anyone who reaches the port. The whole error is in the logs (a WARN when the
// watch starts failing).
func reasonOf(err error) string {
	if r := apierrors.ReasonForError(err); r != metav1.StatusReasonUnknown {
		return string(r)
	}
	return "error (see the logs)"
}

// stateReason is what /readyz says of a refused commit: the system's reason
// (file too large, no space left on device, …), never the error's text, which
// names the state file's path; the whole error is in the logs.
func stateReason(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	// bbolt wraps some errors as text ("file resize error: truncate PATH:
	// file too large"): name the system's reason when the text ends with one.
	for _, e := range []syscall.Errno{syscall.EFBIG, syscall.ENOSPC, syscall.EROFS, syscall.EDQUOT, syscall.EIO, syscall.EACCES, syscall.EPERM} {
		if strings.HasSuffix(err.Error(), ": "+e.Error()) {
			return e.Error()
		}
	}
	return "see the logs"
}

// ready says whether the daemon is ready, and why not: every watch has listed,
// none went stallAfter without an event or a bookmark, and the state file
// takes commits. A watch that fails (forbidden, not served) is reported as
// degraded, by its reason only, but does not make the daemon unready: the
// others go on, and a restart would not fix it; it shows as
// dynwatch_informer_synced 0. A replica that stands by is ready.
func (d *daemon) ready(now time.Time) (bool, string) {
	if !d.acting.Load() {
		if d.opening.Load() {
			return false, "not ready: starting: opening the state file (after a reshard, until the shards that objects moved to have listed)\n"
		}
		if d.o.File.Config.LeaderElection != nil {
			return true, "ok: standing by (another replica leads)\n"
		}
		return false, "not ready: starting\n"
	}
	w := d.current.Load()
	if w == nil {
		return false, "not ready: starting\n"
	}
	stall := d.o.File.Config.Server.StallAfter.Std()
	var notReady, degraded []string
	down := map[string]bool{}
	for _, c := range w.Clusters() {
		if !c.Up {
			// Not the daemon's fault, and the other clusters go on: degraded.
			down[c.Name] = true
			degraded = append(degraded, fmt.Sprintf("degraded: cluster %s: cannot be reached (%s); retrying", c.Name, reasonOf(c.Err)))
		}
	}
	for _, st := range w.Statuses() {
		if down[st.Key.Cluster] {
			continue // its cluster is said to be down
		}
		last := st.LastEvent
		if last.IsZero() {
			last = d.start
		}
		switch {
		case !st.Synced && st.Err != nil:
			degraded = append(degraded, fmt.Sprintf("degraded: %s: %s", st.Key, reasonOf(st.Err)))
		case !st.Synced:
			notReady = append(notReady, fmt.Sprintf("not ready: %s: still listing", st.Key))
		case now.Sub(last) > stall:
			notReady = append(notReady, stalled(st, last, now, stall))
		}
	}
	if err := w.StateErr(); err != nil {
		notReady = append(notReady, fmt.Sprintf("not ready: state: the state file refuses commits (%s); events wait in memory", stateReason(err)))
	}
	body := strings.Join(append(notReady, degraded...), "\n")
	if len(notReady) > 0 {
		return false, body + "\n"
	}
	if body == "" {
		return true, "ok\n"
	}
	return true, "ok\n" + body + "\n"
}

// stalled says that st's watch has brought nothing since last, and, when a
// handling of its events has run for more than half of stall, that this is
// dynwatch's own doing, not the API server's: while one handler call runs
// with 2000 changes or more queued behind it, the watch is not read.
func stalled(st dyninformer.Status, last, now time.Time, stall time.Duration) string {
	why := ""
	if !st.Busy.IsZero() && now.Sub(st.Busy) > stall/2 {
		why = fmt.Sprintf("; one handling of its events has run for %s, and the watch waits for it", now.Sub(st.Busy).Round(time.Second))
	}
	return fmt.Sprintf("not ready: %s: no event or bookmark for %s (stallAfter %s)%s", st.Key, now.Sub(last).Round(time.Second), stall, why)
}

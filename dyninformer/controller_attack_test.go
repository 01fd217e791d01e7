package dyninformer

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/dynwatch/dynwatch/event"
)

// floodServer is a fake API server for config maps in namespace "ns": one
// object x0 listed, then its first watch streams n adds (c1..cn) at once and
// every watch sends a bookmark every 20ms until closed.
type floodServer struct {
	n       int
	watches atomic.Int32
	rv      atomic.Int64
}

func cmJSON(name string, rv int64) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"ns","uid":"u-%s","resourceVersion":"%d"}}`, name, name, rv)
}

func (s *floodServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/namespaces/ns/configmaps" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	w.Header().Set("Content-Type", "application/json")
	if q.Get("watch") != "true" {
		fmt.Fprintf(w, `{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"1"},"items":[%s]}`, cmJSON("x0", 1))
		return
	}
	fl := w.(http.Flusher)
	first := s.watches.Add(1) == 1
	if q.Get("sendInitialEvents") == "true" {
		fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", cmJSON("x0", 1))
		fmt.Fprintf(w, `{"type":"BOOKMARK","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"1","annotations":{"k8s.io/initial-events-end":"true"}}}}`+"\n")
	}
	fl.Flush()
	if first {
		for i := 1; i <= s.n; i++ {
			fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", cmJSON("c"+strconv.Itoa(i), int64(i+1)))
		}
		s.rv.Store(int64(s.n + 1))
		fl.Flush()
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
			if _, err := fmt.Fprintf(w, `{"type":"BOOKMARK","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"%d"}}}`+"\n", max(s.rv.Load(), 1)); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

var attackWatch = cmWatch("ns")

// slowHandler records live adds; every live call takes slow, and the call
// for the config map named block waits until release is closed.
type slowHandler struct {
	mu       sync.Mutex
	names    []string
	block    string
	slow     time.Duration
	entered  chan struct{}
	release  chan struct{}
	once     sync.Once
	after    atomic.Bool // set by the test once Set returned
	lateCall atomic.Int32
}

func (h *slowHandler) handle(_ Key, ev *event.Event) {
	if h.after.Load() {
		h.lateCall.Add(1)
	}
	if ev.Origin != event.Live {
		return
	}
	if h.slow > 0 {
		time.Sleep(h.slow)
	}
	if ev.Name == h.block {
		h.once.Do(func() { close(h.entered) })
		<-h.release
	}
	h.mu.Lock()
	h.names = append(h.names, ev.Name)
	h.mu.Unlock()
}

func (h *slowHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.names)
}

func attackManager(t *testing.T, s *floodServer, h *slowHandler) (*Manager, func()) {
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	client, err := NewClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(client, h.handle, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	m.Set([]Watch{attackWatch}, ListsKnown)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	stop := func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return within 10s of its context's end")
		}
	}
	return m, stop
}

// TestAttackLastEventWhileAHandlerCallBlocksOnADeepQueue: while one handler
// call blocks with 2000 or more deltas queued, the FIFO holds its lock, the
// reflector cannot add, and the watch is no longer read: Status.LastEvent
// (readyz's stall check, daemon/server.go) stops although the API server
// keeps sending bookmarks. With the shared informer the listener buffered
// and the watch was read on. The attack proved that readyz then blamed the
// API server; the wait is by design (what waits is bounded), so Status.Busy
// now says since when the call in flight has run, and readyz says it
// (daemon TestStalledSaysWhenTheHandlingIsStuck). The test asserts that
// instead of a LastEvent that moves.
func TestAttackLastEventWhileAHandlerCallBlocksOnADeepQueue(t *testing.T) {
	const n = 6000
	h := &slowHandler{block: "c3000", slow: 100 * time.Microsecond, entered: make(chan struct{}), release: make(chan struct{})}
	m, stop := attackManager(t, &floodServer{n: n}, h)
	defer stop()
	released := false
	defer func() {
		if !released {
			close(h.release)
		}
	}()
	select {
	case <-h.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the handler never got c3000")
	}
	// Statuses and KeySynced answer during the call (they did before).
	time.Sleep(300 * time.Millisecond)
	st1 := statusesWithin(t, m, time.Second)
	time.Sleep(time.Second)
	st2 := statusesWithin(t, m, time.Second)
	// Whether or not the watch waits for the call (LastEvent stands still
	// when 2000 or more were queued as it began), readyz must see the call.
	if st2[0].Busy.IsZero() || !st2[0].Busy.Equal(st1[0].Busy) || time.Since(st2[0].Busy) < time.Second {
		t.Errorf("one handler call blocked for over a second (LastEvent %s, then %s), and Busy does not show that call: %s, then %s",
			st1[0].LastEvent.Format(time.StampMilli), st2[0].LastEvent.Format(time.StampMilli), st1[0].Busy.Format(time.StampMilli), st2[0].Busy.Format(time.StampMilli))
	}
	close(h.release)
	released = true
	deadline := time.Now().Add(20 * time.Second)
	for h.count() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	h.mu.Lock()
	got := append([]string(nil), h.names...)
	h.mu.Unlock()
	if len(got) != n {
		t.Fatalf("%d live adds, want %d", len(got), n)
	}
	for i, name := range got {
		if name != "c"+strconv.Itoa(i+1) {
			t.Fatalf("live add %d is %s", i, name)
		}
	}
}

func statusesWithin(t *testing.T, m *Manager, d time.Duration) []Status {
	t.Helper()
	ch := make(chan []Status, 1)
	go func() { ch <- m.Statuses() }()
	select {
	case st := <-ch:
		if len(st) != 1 {
			t.Fatalf("%d statuses", len(st))
		}
		return st
	case <-time.After(d):
		t.Fatal("Statuses waited for a handler call")
		return nil
	}
}

// TestAttackSetStopsMidFlood: Set stopping a watch whose FIFO holds thousands
// of deltas, with a handler call in flight, returns only after that call, no
// call comes after it, Replay after the stop and during it does not deadlock,
// and Run returns at shutdown.
func TestAttackSetStopsMidFlood(t *testing.T) {
	const n = 6000
	h := &slowHandler{block: "c2500", slow: 50 * time.Microsecond, entered: make(chan struct{}), release: make(chan struct{})}
	m, stop := attackManager(t, &floodServer{n: n}, h)
	defer stop()
	select {
	case <-h.entered:
	case <-time.After(20 * time.Second):
		close(h.release)
		t.Fatal("the handler never got c2500")
	}
	replayed := make(chan bool, 1)
	go func() { replayed <- m.Replay(attackWatch.Key(), 7) }() // waits for the call in flight
	setDone := make(chan struct{})
	go func() {
		m.Set(nil, ListsKnown)
		h.after.Store(true)
		close(setDone)
	}()
	select {
	case <-setDone:
		t.Fatal("Set returned while a handler call of the watch it stopped was in flight")
	case <-time.After(200 * time.Millisecond):
	}
	close(h.release)
	select {
	case <-setDone:
	case <-time.After(5 * time.Second):
		t.Fatal("Set did not return after the handler call ended")
	}
	select {
	case <-replayed:
	case <-time.After(5 * time.Second):
		t.Fatal("Replay during the flood did not return")
	}
	time.Sleep(200 * time.Millisecond)
	if c := h.lateCall.Load(); c != 0 {
		t.Errorf("%d handler calls after Set returned", c)
	}
	if got := h.count(); got >= n {
		t.Errorf("%d live adds: the stopped watch's queue was handed over whole", got)
	}
}

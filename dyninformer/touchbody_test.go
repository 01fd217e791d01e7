package dyninformer

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/rest"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// managerOn runs a Manager on attackWatch against the fake API server h
// (a server of its own per test: no API server needed).
func managerOn(t *testing.T, h http.Handler) *Manager {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return runManager(t, &rest.Config{Host: srv.URL}, attackWatch, func(Key, *event.Event) {})
}

// runManager runs a Manager of cfg's server on w, handing events to handle,
// until the test ends, and waits for its sync.
func runManager(t *testing.T, cfg *rest.Config, w Watch, handle Handler) *Manager {
	t.Helper()
	client, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(client, handle, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	m.Set([]Watch{w}, ListsKnown)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return within 10s")
		}
	})
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	if !m.WaitForSync(wctx) {
		t.Fatal("no sync")
	}
	return m
}

// deadWatchServer lists config maps in "ns" and answers every watch
// (watch-list or not) with answer: never an event or a bookmark.
type deadWatchServer struct {
	lists, watches atomic.Int32
	answer         func(http.ResponseWriter)
}

func (s *deadWatchServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/namespaces/ns/configmaps" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Query().Get("watch") == "true" {
		s.watches.Add(1)
		s.answer(w)
		return
	}
	s.lists.Add(1)
	fmt.Fprintf(w, `{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"1"},"items":[%s]}`, cmJSON("x0", 1))
}

// refuseWatch refuses a watch with 403, as an API server does for a user
// granted list but not watch, or a proxy that does not pass streams on.
func refuseWatch(w http.ResponseWriter) {
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"Forbidden","code":403,"message":"configmaps is forbidden: cannot watch"}`)
}

// TestLastEventStandsWhileNoWatchIsAccepted: a watch the API server never
// accepts delivers no event and no bookmark, so LastEvent stands still
// through the relists that follow each refusal, and /readyz calls it
// stalled after stallAfter. (A review found that noting liveness at each
// complete list kept such a watch "alive" forever.)
func TestLastEventStandsWhileNoWatchIsAccepted(t *testing.T) {
	t.Parallel()
	lastEventStands(t, &deadWatchServer{answer: refuseWatch}, "refused")
}

// errorWatch accepts a watch with a 200 whose body is a single ERROR event,
// then ends it: what an API server whose watch cache is stuck behind etcd
// answers (the cacher's errWatcher: 504 "Too large resource version"), or
// one whose storage fails every watch (500). The list is read from etcd and
// succeeds.
func errorWatch(w http.ResponseWriter) {
	fmt.Fprint(w, `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"Timeout","code":504,"message":"Too large resource version: 7, current: 1","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1}}}`+"\n")
}

// TestLastEventStandsWhileEveryWatchIsAnError: a watch that the API server
// answers with 200 and an ERROR event, every time, delivers no event and no
// bookmark: the informer is as dead as one whose watch is refused with 403,
// LastEvent stands still, and /readyz (daemon/server.go stalled) calls it
// stalled. (A review found that counting the bytes of the body, an error
// event's included, kept such a watch alive; the old goroutine did the same.)
// Without watch-list, so that the relists come paced.
func TestLastEventStandsWhileEveryWatchIsAnError(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, features.WatchListClient, false)
	lastEventStands(t, &deadWatchServer{answer: errorWatch}, "answered with nothing but an ERROR event")
}

// lastEventStands runs a Manager against s until two more watches than the
// first were answered (each followed by a relist), and fails if its
// LastEvent moved meanwhile.
func lastEventStands(t *testing.T, s *deadWatchServer, answered string) {
	t.Helper()
	m := managerOn(t, s)
	testenv.WaitFor(t, "a first watch", 30*time.Second, func() bool { return s.watches.Load() >= 1 })
	time.Sleep(50 * time.Millisecond)
	first := m.Statuses()[0].LastEvent
	watches := s.watches.Load()
	testenv.WaitFor(t, "two more watches", 30*time.Second, func() bool { return s.watches.Load() >= watches+2 })
	time.Sleep(50 * time.Millisecond)
	st := m.Statuses()[0]
	if !st.Synced {
		t.Fatalf("not synced: %+v", st)
	}
	if st.LastEvent.After(first) {
		t.Errorf("%d watches, each %s (%d lists), yet LastEvent moved from %s to %s: /readyz's stall check never sees this watch as stalled",
			s.watches.Load(), answered, s.lists.Load(), first.Format(time.StampMicro), st.LastEvent.Format(time.StampMicro))
	}
}

// relistStreamServer streams a watch-list of x0, then (once gone is closed)
// ends that watch with a 410 Expired; the watch-list that relists streams
// y1…y40 one every 100 ms before its initial-events-end bookmark.
type relistStreamServer struct {
	gone        chan struct{}
	watches     atomic.Int32
	streamed    atomic.Int32
	mu          sync.Mutex
	streamStart time.Time
}

func (s *relistStreamServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/namespaces/ns/configmaps" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	q := r.URL.Query()
	if q.Get("watch") != "true" || q.Get("sendInitialEvents") != "true" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"BadRequest","code":400,"message":"this server only serves watch-lists"}`)
		return
	}
	fl := w.(http.Flusher)
	end := func(rv int) {
		fmt.Fprintf(w, `{"type":"BOOKMARK","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"%d","annotations":{"k8s.io/initial-events-end":"true"}}}}`+"\n", rv)
		fl.Flush()
	}
	switch s.watches.Add(1) {
	case 1:
		fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", cmJSON("x0", 1))
		end(1)
		select {
		case <-s.gone:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"Expired","code":410,"message":"too old resource version: 1 (5)"}}`+"\n")
		fl.Flush()
		return
	case 2:
		s.mu.Lock()
		s.streamStart = time.Now()
		s.mu.Unlock()
		for i := 1; i <= 40; i++ {
			fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", cmJSON(fmt.Sprintf("y%d", i), int64(i+5)))
			fl.Flush()
			s.streamed.Add(1)
			select {
			case <-time.After(100 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		end(50)
	}
	<-r.Context().Done()
}

// TestLastEventMovesWhileAWatchListRelistStreams: after a 410 Gone the
// reflector relists, with watch-list (client-go's default) as a new stream of
// the whole resource, whose events it keeps in a store of its own until the
// stream ends. Each of them is the API server feeding the watch: LastEvent
// moves while it streams, or /readyz would call stalled the re-stream of a
// large resource that takes longer than stallAfter. (A review found that
// noting liveness in the FIFO missed them.)
func TestLastEventMovesWhileAWatchListRelistStreams(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, features.WatchListClient, true)
	s := &relistStreamServer{gone: make(chan struct{})}
	m := managerOn(t, s)
	before := m.Statuses()[0].LastEvent
	time.Sleep(20 * time.Millisecond)
	close(s.gone)
	testenv.WaitFor(t, "the relist to stream 15 events", 30*time.Second, func() bool { return s.streamed.Load() >= 15 })
	time.Sleep(150 * time.Millisecond) // the client reads what was flushed
	s.mu.Lock()
	start := s.streamStart
	s.mu.Unlock()
	if last := m.Statuses()[0].LastEvent; !last.After(start) {
		t.Errorf("the relist's watch-list has streamed %d events since %s, yet LastEvent is %s (it was %s before the 410)",
			s.streamed.Load(), start.Format(time.StampMicro), last.Format(time.StampMicro), before.Format(time.StampMicro))
	}
}

// TestTouchBodyFollowsOnlyAWatchsOKBody: the transport follows the body of a
// 200 response to a watch request that carries a touch, at each read that
// brings bytes; a refused watch's body, a list's and a request without a
// touch are left as they are.
func TestTouchBodyFollowsOnlyAWatchsOKBody(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/refused" {
			w.WriteHeader(http.StatusForbidden)
		}
		fmt.Fprint(w, "some bytes")
	}))
	defer srv.Close()
	hc := &http.Client{Transport: touchBodies(http.DefaultTransport)}
	for _, tc := range []struct {
		path  string
		touch bool
		want  bool
	}{
		{"/watch?watch=true", true, true},
		{"/watch?watch=1", true, true},
		{"/refused?watch=true", true, false},
		{"/list", true, false},
		{"/watch?watch=true", false, false},
	} {
		var touched atomic.Int32
		ctx := context.Background()
		if tc.touch {
			ctx = withTouch(ctx, func() { touched.Add(1) })
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != "some bytes" {
			t.Fatalf("%s: read %q, %v", tc.path, b, err)
		}
		if got := touched.Load() > 0; got != tc.want {
			t.Errorf("%s (touch %v): touched %d times, want touched %v", tc.path, tc.touch, touched.Load(), tc.want)
		}
	}
}

// TestFramerTouchesPerEventNotPerError: the framer takes a watch body's
// touch and calls it once per frame that is no ERROR event, in whatever
// pieces the body comes, and the body no longer calls it per read.
func TestFramerTouchesPerEventNotPerError(t *testing.T) {
	t.Parallel()
	stream := []byte(`{"type":"ADDED","object":{"metadata":{"name":"a"}}}` + "\n" +
		`{"type":"ERROR","object":{"kind":"Status","code":500}}` + "\n" +
		`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}` + "\n" +
		`{"object":{"kind":"Status","code":410},"type":"ERROR"}` + "\n" +
		`{"object":{"metadata":{"name":"b"}},"type":"MODIFIED"}` + "\n")
	for _, n := range []int{1, 7, 64, len(stream)} {
		var touched atomic.Int32
		body := &touchBody{ReadCloser: &oneByte{data: stream, n: n}, touch: func() { touched.Add(1) }}
		frames := readAll(t, jsonFramer{hints: true}.NewFrameReader(body))
		if len(frames) != 5 {
			t.Fatalf("reads of %d: %d frames, want 5", n, len(frames))
		}
		if got := touched.Load(); got != 3 {
			t.Errorf("reads of %d: touched %d times, want 3 (ADDED, BOOKMARK, MODIFIED)", n, got)
		}
	}
}

// h2GzipServer serves, over HTTP/2 with TLS, a list of x0 and a watch that
// gzips its stream (when the client accepts gzip, as Go's transport does
// unless DisableCompression) and sends an ADDED event every 50 ms.
type h2GzipServer struct {
	gzipped atomic.Bool
	proto   atomic.Value
}

func (s *h2GzipServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/namespaces/ns/configmaps" {
		http.NotFound(w, r)
		return
	}
	s.proto.Store(r.Proto)
	w.Header().Set("Content-Type", "application/json")
	q := r.URL.Query()
	if q.Get("watch") != "true" {
		fmt.Fprintf(w, `{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"1"},"items":[%s]}`, cmJSON("x0", 1))
		return
	}
	var out io.Writer = w
	flush := func() { w.(http.Flusher).Flush() }
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		s.gzipped.Store(true)
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		defer gz.Close()
		out = gz
		flush = func() { _ = gz.Flush(); w.(http.Flusher).Flush() }
	}
	w.WriteHeader(http.StatusOK)
	flush()
	for i := 2; ; i++ {
		fmt.Fprintf(out, `{"type":"ADDED","object":%s}`+"\n", cmJSON(fmt.Sprintf("y%d", i), int64(i)))
		flush()
		select {
		case <-time.After(50 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
	}
}

// TestLastEventOverHTTP2Gzip: over HTTP/2, with the client's transparent
// gzip on and off, the body client-go's framer reads is touchBody's: events
// arrive and LastEvent moves with them. (It holds.)
func TestLastEventOverHTTP2Gzip(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, features.WatchListClient, false)
	for _, disable := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableCompression=%v", disable), func(t *testing.T) {
			s := &h2GzipServer{}
			srv := httptest.NewUnstartedServer(s)
			srv.EnableHTTP2 = true
			srv.StartTLS()
			t.Cleanup(srv.Close) // after the Manager stops
			var adds atomic.Int32
			cfg := &rest.Config{Host: srv.URL, DisableCompression: disable, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
			m := runManager(t, cfg, attackWatch, func(_ Key, ev *event.Event) {
				if ev.Type == event.Add {
					adds.Add(1)
				}
			})
			testenv.WaitFor(t, "10 watch events", 20*time.Second, func() bool { return adds.Load() >= 10 })
			a := m.Statuses()[0].LastEvent
			time.Sleep(300 * time.Millisecond)
			b := m.Statuses()[0].LastEvent
			if a.IsZero() || !b.After(a) {
				t.Errorf("proto %v gzip %v: events stream, yet LastEvent %s then %s", s.proto.Load(), s.gzipped.Load(), a, b)
			}
			if p := s.proto.Load(); p != "HTTP/2.0" || s.gzipped.Load() == disable {
				t.Errorf("test setup: proto %v, gzipped %v with DisableCompression %v", p, s.gzipped.Load(), disable)
			}
		})
	}
}

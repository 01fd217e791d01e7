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
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/rest"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

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
			defer srv.Close()
			client, err := NewClient(&rest.Config{Host: srv.URL, DisableCompression: disable, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
			if err != nil {
				t.Fatal(err)
			}
			var adds atomic.Int32
			m := NewManager(client, func(_ Key, ev *event.Event) {
				if ev.Type == event.Add {
					adds.Add(1)
				}
			}, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			m.Set([]Watch{attackWatch}, ListsKnown)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- m.Run(ctx) }()
			defer func() { cancel(); <-done }()
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

package dyninformer

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// A server that refuses shardSelector with a 400 (a server whose validation
// of the parameter differs: an aggregated API server on another apiserver
// library, a future syntax change) must not make every list of the shard fail
// forever: the client can filter by itself, as for a server that ignores it.
func TestShardListFallsBackOn400(t *testing.T) {
	var watchesOnly atomic.Bool // refuse it on watches only
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Has("shardSelector") && (!watchesOnly.Load() || r.URL.Query().Get("watch") == "true") {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure",
				Reason: metav1.StatusReasonBadRequest, Code: 400, Message: "unknown query parameter shardSelector"})
			return
		}
		if r.URL.Query().Get("watch") == "true" {
			return // a watch stream that ends at once
		}
		items := []string{}
		for i := range 4 {
			items = append(items, fmt.Sprintf(`{"metadata":{"name":"cm-%d","namespace":"ns","uid":"%08x-0000-4000-8000-000000000000","resourceVersion":"1"}}`, i, i*977))
		}
		fmt.Fprintf(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[%s]}`, strings.Join(items, ","))
	}))
	defer srv.Close()
	c, err := NewClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	sc := c.WithShard(NewShard(2, 0, false), nil)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for attempt := range 3 {
		if _, err := sc.List(t.Context(), gvr, "", metav1.ListOptions{}); err != nil {
			t.Errorf("list %d of the shard: %v (no fallback to the client filter)", attempt, err)
		}
	}
	// A 400 to a watch falls back too, where lists take the selector.
	watchesOnly.Store(true)
	fresh := c.WithShard(NewShard(2, 0, false), nil)
	w, err := fresh.Watch(t.Context(), gvr, "", metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatalf("watch of the shard: %v (no fallback to the client filter)", err)
	}
	w.Stop()
}

// Stopping a sharded watch while an event is in flight (the reflector stops
// reading, then calls Stop: informer stopped at a reload, a watch error) must
// not leave the filter's goroutine blocked forever on its send.
func TestShardWatchStopDoesNotLeak(t *testing.T) {
	sc := (&Client{}).WithShard(NewShard(2, 0, false), nil)
	var uid string
	for n := 0; uid == ""; n++ {
		if u := fmt.Sprintf("%08x-0000-4000-8000-000000000000", n); sc.shard.Owns(u, "ns") {
			uid = u
		}
	}
	before := filterLoops()
	for range 20 {
		fw := watch.NewFakeWithChanSize(2, false)
		w := sc.filterWatch(t.Context(), fw, cmGVR, "ns", "")
		fw.Add(&Object{name: "a", namespace: "ns", uid: uid, resourceVersion: "2"})
		fw.Add(&Object{name: "a", namespace: "ns", uid: uid, resourceVersion: "3"})
		time.Sleep(10 * time.Millisecond)
		w.Stop() // the consumer no longer reads
	}
	time.Sleep(200 * time.Millisecond)
	if n := filterLoops() - before; n > 0 {
		t.Errorf("%d filter goroutines left blocked after Stop", n)
	}
}

func filterLoops() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "watch.(*filteredWatch).loop") + strings.Count(string(buf), "(*shardFilterWatch).loop")
}

// A shard's watch learns whether the server filters from what it brings: many
// of the shard's own objects and none of another's (it does), one of
// another's (it does not); only a watch-list that told neither asks, after
// its initial events, with a list that matches nothing.
func TestShardWatchLearnsServerFilter(t *testing.T) {
	shard := NewShard(2, 0, false)
	var mine, theirs []string
	for n := 0; len(mine) < proofObjects || len(theirs) == 0; n++ {
		uid := fmt.Sprintf("%08x-0000-4000-8000-000000000000", n*7919)
		obj := fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-%d","namespace":"ns","uid":%q,"resourceVersion":"%d"}}`, n, uid, 10+n)
		if shard.Owns(uid, "ns") {
			mine = append(mine, `{"type":"ADDED","object":`+obj+`}`)
		} else {
			theirs = append(theirs, `{"type":"ADDED","object":`+obj+`}`)
		}
	}
	const end = `{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"99","annotations":{"k8s.io/initial-events-end":"true"}}}}`
	for _, tc := range []struct {
		name    string
		frames  []string
		filters bool
		probes  int32
	}{
		{"the shard's objects only", append(mine, end), true, 0},
		{"one of another shard's", append([]string{mine[0], theirs[0]}, end), false, 0},
		{"no object", []string{end}, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var probes atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				q := r.URL.Query()
				if q.Get("watch") == "true" {
					fmt.Fprint(w, strings.Join(tc.frames, "\n"))
					return
				}
				if q.Get("labelSelector") == noObject && q.Get("limit") == "1" {
					probes.Add(1)
				}
				fmt.Fprintf(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"99","shardInfo":{"selector":%q}},"items":[]}`, q.Get("shardSelector"))
			}))
			defer srv.Close()
			c, err := NewClient(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			sc := c.WithShard(shard, slog.New(slog.DiscardHandler))
			yes := true
			w, err := sc.Watch(t.Context(), cmGVR, "ns", metav1.ListOptions{SendInitialEvents: &yes, AllowWatchBookmarks: true})
			if err != nil {
				t.Fatal(err)
			}
			for range w.ResultChan() {
			}
			w.Stop()
			if got, known := sc.server.get("v1"); !known || got != tc.filters || probes.Load() != tc.probes {
				t.Errorf("server filters %v (known %v) after %d probes, want %v after %d", got, known, probes.Load(), tc.filters, tc.probes)
			}
		})
	}
}

package dyninformer

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Has("shardSelector") {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure",
				Reason: metav1.StatusReasonBadRequest, Code: 400, Message: "unknown query parameter shardSelector"})
			return
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
		w := sc.filterWatch(fw)
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

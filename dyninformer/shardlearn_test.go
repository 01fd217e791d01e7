package dyninformer

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// One of the shard's own objects changed 32 times proves nothing about the
// server: a server that does not filter sends them too. Only distinct objects
// count (each uid a chance of 1/count to be the shard's), so the watch that
// then brings another shard's object still learns that the server does not
// filter.
func TestShardWatchLearnsFromDistinctObjects(t *testing.T) {
	shard := NewShard(2, 0, false)
	var mine, theirs string
	for n := 0; mine == "" || theirs == ""; n++ {
		uid := fmt.Sprintf("%08x-0000-4000-8000-000000000000", n*7919)
		if shard.Owns(uid, "ns") {
			mine = uid
		} else {
			theirs = uid
		}
	}
	event := func(typ, uid string, rv int) string {
		return fmt.Sprintf(`{"type":%q,"object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-%s","namespace":"ns","uid":%q,"resourceVersion":"%d"}}}`, typ, uid[:8], uid, rv)
	}
	var frames []string
	for i := range proofObjects + 8 {
		frames = append(frames, event("MODIFIED", mine, 10+i)) // a hot object of the shard
	}
	frames = append(frames, event("MODIFIED", theirs, 100))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" {
			fmt.Fprint(w, strings.Join(frames, "\n")) // the selector ignored
			return
		}
		fmt.Fprint(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[]}`)
	}))
	defer srv.Close()
	c, err := NewClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	sc := c.WithShard(shard, slog.New(slog.DiscardHandler))
	w, err := sc.Watch(t.Context(), cmGVR, "ns", metav1.ListOptions{ResourceVersion: "9"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ev := range w.ResultChan() {
		if o := ev.Object.(*Object); o.uid != mine {
			t.Errorf("%s of %s passed the shard filter", ev.Type, o.uid)
		}
		n++
	}
	w.Stop()
	if n != proofObjects+8 {
		t.Errorf("%d events of the shard's object, want %d", n, proofObjects+8)
	}
	if got, known := sc.server.get("v1"); !known || got {
		t.Errorf("server filters %v (known %v), want false: one object's events are no proof", got, known)
	}
}

// A 400 that is not about the shardSelector (a field selector the resource
// does not support: the request fails without the selector too) must not
// turn server-side filtering off for the group/version for the life of the
// process: the next good list still carries the selector and the server
// still filters.
func TestShardOtherBadRequestKeepsTheSelector(t *testing.T) {
	gated, err := testenv.Start(testenv.Options{FeatureGates: []string{"ShardedListAndWatch"}})
	if err != nil {
		t.Fatal(err)
	}
	defer gated.Stop()
	ns, _ := shardObjects(t, gated.Config, 4)
	all, err := NewClient(gated.Config)
	if err != nil {
		t.Fatal(err)
	}
	sc := all.WithShard(NewShard(2, 0, false), slog.New(slog.DiscardHandler))
	if _, err := sc.List(t.Context(), cmGVR, ns, metav1.ListOptions{FieldSelector: "spec.nodeName=x"}); err == nil {
		t.Fatal("a list with an unsupported field selector succeeded")
	}
	if _, err := sc.Watch(t.Context(), cmGVR, ns, metav1.ListOptions{FieldSelector: "spec.nodeName=x"}); err == nil {
		t.Fatal("a watch with an unsupported field selector succeeded")
	}
	l, err := sc.List(t.Context(), cmGVR, ns, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.ShardInfo == nil || !sc.ServerFilters()["v1"] {
		t.Errorf("after another 400: shardInfo %v, server filters %v; want the selector sent and the server filtering", l.ShardInfo, sc.ServerFilters())
	}
}

// A server that echoes the selector in metadata.shardInfo but sends every
// object anyway (a proxy or an aggregated server that copies the field) does
// not filter: a list that brings another shard's object says so, whatever
// its shardInfo.
func TestShardListEchoWithoutFilter(t *testing.T) {
	shard := NewShard(2, 0, false)
	var items []string
	mine, theirs := 0, 0
	for n := 0; mine == 0 || theirs == 0; n++ {
		uid := fmt.Sprintf("%08x-0000-4000-8000-000000000000", n*7919)
		if shard.Owns(uid, "ns") {
			mine++
		} else {
			theirs++
		}
		items = append(items, fmt.Sprintf(`{"metadata":{"name":"cm-%d","namespace":"ns","uid":%q,"resourceVersion":"%d"}}`, n, uid, 10+n))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"99","shardInfo":{"selector":%q}},"items":[%s]}`,
			r.URL.Query().Get("shardSelector"), strings.Join(items, ","))
	}))
	defer srv.Close()
	c, err := NewClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	sc := c.WithShard(shard, slog.New(slog.DiscardHandler))
	l, err := sc.List(t.Context(), cmGVR, "ns", metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != mine {
		t.Errorf("%d items, want the shard's %d", len(l.Items), mine)
	}
	if got := sc.ServerFilters()["v1"]; got {
		t.Error("server filters true: it sent another shard's object with its shardInfo")
	}
}

// A server that refused the selector (a 400) and is then restarted with
// sharded list and watch (an aggregated API server upgraded) is asked again:
// learning is redone after a server restart, so a refusal does not last for
// the life of the process.
func TestShardRefusalIsAskedAgain(t *testing.T) {
	var restarted atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		sel := r.URL.Query().Get("shardSelector")
		if sel != "" && !restarted.Load() {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"BadRequest","code":400,"message":"unknown parameter shardSelector"}`)
			return
		}
		info := ""
		if sel != "" {
			info = fmt.Sprintf(`,"shardInfo":{"selector":%q}`, sel)
		}
		fmt.Fprintf(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"9"%s},"items":[]}`, info)
	}))
	defer srv.Close()
	c, err := NewClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	sc := c.WithShard(NewShard(2, 0, false), slog.New(slog.DiscardHandler))
	now := time.Unix(1_800_000_000, 0)
	sc.server.now = func() time.Time { return now }
	if _, err := sc.List(t.Context(), cmGVR, "", metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if !sc.server.isRefused("v1") {
		t.Fatal("a 400 to the selector, then a success without it: not refused")
	}
	restarted.Store(true)
	now = now.Add(time.Hour)
	if _, err := sc.List(t.Context(), cmGVR, "", metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if !sc.ServerFilters()["v1"] {
		t.Errorf("an hour after the refusal, the restarted server is not asked again: server filters %v", sc.ServerFilters())
	}
}

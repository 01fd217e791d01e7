package dyninformer

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// The server filter and the client's agree for by: namespace too, for a list
// from etcd and one from the watch cache (resourceVersion 0), for a
// namespaced and a cluster-scoped resource.
func TestShardServerAgreesByNamespace(t *testing.T) {
	gated, err := testenv.Start(testenv.Options{FeatureGates: []string{"ShardedListAndWatch"}})
	if err != nil {
		t.Fatal(err)
	}
	defer gated.Stop()
	d := dynamic.NewForConfigOrDie(gated.Config)
	for i := range 10 {
		ns := testenv.Namespace(t, d)
		if _, err := d.Resource(cmGVR).Namespace(ns).Create(t.Context(), labelledConfigMap(ns, fmt.Sprintf("cm-%d", i), "v"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := NewClient(gated.Config)
	if err != nil {
		t.Fatal(err)
	}
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	for _, gvr := range []schema.GroupVersionResource{cmGVR, nsGVR} {
		everything, err := all.List(t.Context(), gvr, "", metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for index := range 2 {
			shard := NewShard(2, index, true)
			want := map[string]bool{}
			for _, it := range everything.Items {
				o := it.(*Object)
				if shard.Owns(o.uid, o.namespace) {
					want[o.uid] = true
				}
			}
			for _, rv := range []string{"", "0"} {
				sc := all.WithShard(shard, nil)
				l, err := sc.List(t.Context(), gvr, "", metav1.ListOptions{ResourceVersion: rv})
				if err != nil {
					t.Fatalf("%s shard %d rv %q: %v", gvr.Resource, index, rv, err)
				}
				if !sc.ServerFilters()["v1"] {
					t.Errorf("%s shard %d rv %q: the server did not filter by namespace", gvr.Resource, index, rv)
				}
				got := map[string]bool{}
				for _, it := range l.Items {
					got[it.(*Object).uid] = true
				}
				if len(got) != len(want) {
					t.Errorf("%s shard %d rv %q: %d objects, the client's share is %d", gvr.Resource, index, rv, len(got), len(want))
				}
			}
		}
	}
}

// A server that stops filtering between a list and the next watch (restarted
// with the gate off: the watch resumes from its resourceVersion without a
// relist, its shardSelector now ignored) still gives the shard only its own
// objects' events, and the next list notices.
func TestShardServerStopsFiltering(t *testing.T) {
	gated, err := testenv.Start(testenv.Options{FeatureGates: []string{"ShardedListAndWatch"}})
	if err != nil {
		t.Fatal(err)
	}
	defer gated.Stop()
	var strip atomic.Bool
	cfg := rest.CopyConfig(gated.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return testenv.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
			if strip.Load() {
				q := r.URL.Query()
				q.Del("shardSelector")
				r.URL.RawQuery = q.Encode()
			}
			return rt.RoundTrip(r)
		})
	}
	all, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	shard := NewShard(2, 1, false)
	sc := all.WithShard(shard, nil)
	ns, _ := shardObjects(t, gated.Config, 10)
	l, err := sc.List(t.Context(), cmGVR, ns, metav1.ListOptions{})
	if err != nil || !sc.ServerFilters()["v1"] {
		t.Fatalf("list: %v, server filters %v", err, sc.ServerFilters())
	}
	strip.Store(true)
	w, err := sc.Watch(t.Context(), cmGVR, ns, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	d := dynamic.NewForConfigOrDie(gated.Config)
	for i := range 20 {
		if _, err := d.Resource(cmGVR).Namespace(ns).Create(t.Context(), labelledConfigMap(ns, fmt.Sprintf("late-%d", i), "v"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for timeout := time.After(3 * time.Second); ; {
		select {
		case ev := <-w.ResultChan():
			if o, ok := ev.Object.(*Object); ok {
				n++
				if !shard.Owns(o.uid, o.namespace) {
					t.Errorf("watch: %s %s is another shard's", ev.Type, o.name)
				}
			}
			continue
		case <-timeout:
		}
		break
	}
	if n == 0 {
		t.Error("watch: no events")
	}
	if _, err := sc.List(t.Context(), cmGVR, ns, metav1.ListOptions{}); err != nil || sc.ServerFilters()["v1"] {
		t.Errorf("relist: %v, server filters %v (want false)", err, sc.ServerFilters())
	}
}

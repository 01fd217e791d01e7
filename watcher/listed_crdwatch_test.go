package watcher

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/dynwatch/dynwatch/plan"
)

// writeAfterFirstCRDList lets the first list (or watch-list) of CRDs
// through, then writes to the cluster (so any later list is at a later
// resourceVersion) before handing its answer over.
type writeAfterFirstCRDList struct {
	rt      http.RoundTripper
	once    atomic.Bool
	written chan struct{}
	write   func()
}

func (w *writeAfterFirstCRDList) RoundTrip(r *http.Request) (*http.Response, error) {
	q := r.URL.Query()
	list := r.URL.Path == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions" && (q.Get("watch") != "true" || q.Get("sendInitialEvents") == "true")
	if !list {
		return w.rt.RoundTrip(r)
	}
	if !w.once.CompareAndSwap(false, true) {
		<-w.written // the others list after the write
		return w.rt.RoundTrip(r)
	}
	resp, err := w.rt.RoundTrip(r)
	w.write()
	close(w.written)
	return resp, err
}

// Watcher.Listed maps each watch's first list's resourceVersion by state
// scope; a config that watches CRDs (cluster-wide, as it must) has two
// informers of that scope: its own, and the watcher's CRD watch
// (source.crds, of every CRD, unsharded). Statuses appends the CRD watch
// after the watched set, so Listed gives the CRD watch's first list for
// the user's CRD scope, whatever the user's watch listed at. A reshard's
// old shard lists the CRDs that moved at that resourceVersion: when the CRD
// watch listed after the user's watch (as here), a CRD deleted between the
// two lists is delivered as deleted twice (the new owner had it; the old
// shard finds it gone); when it listed before, one deleted between them is
// at that resourceVersion (the old shard drops its record) but in no list
// of the new owner: its delete is lost.
func TestListedGivesTheUsersWatchOfCRDsNotTheCRDWatch(t *testing.T) {
	ns := namespace(t)
	file, err := plan.Parse(t.Name()+".yaml", []byte(`apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules: [{name: crds, resources: [{group: apiextensions.k8s.io, resource: customresourcedefinitions}], actions: [out]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	written := make(chan struct{})
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &writeAfterFirstCRDList{rt: rt, written: written, write: func() {
			create(t, cmGVR, ns, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": fmt.Sprintf("bump-%d", n.Add(1))}})
		}}
	})
	r := run(t, file, informerClient(t, cfg), discovery.NewDiscoveryClientForConfigOrDie(env.Config), infoLogs)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for !r.w.Synced() || len(r.w.Manager().Watches()) == 0 || !r.w.Manager().HasSynced() {
		if ctx.Err() != nil {
			t.Fatal("not synced")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var own string
	for _, st := range r.w.Manager().Statuses() {
		if st.Key.GVR == crdGVR {
			own = st.Listed
		}
	}
	if own == "" {
		t.Fatalf("the user's CRD watch has not listed: %v", r.w.Manager().Statuses())
	}
	listed := r.w.Listed()
	t.Logf("Listed: %v; the user's CRD watch's first list: %s; all statuses: %+v", listed, own, r.w.Statuses())
	scope := watchScope(r.w.Manager().Watches()[0]).String()
	if listed[scope] != own {
		t.Errorf("Listed()[%q] = %s, but the user's watch of that scope first listed at %s (the CRD watch's list took its place): the old shard lists the moved CRDs at another point than the new owner's list", scope, listed[scope], own)
	}
}

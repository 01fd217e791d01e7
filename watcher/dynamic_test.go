package watcher

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	dwdiscovery "github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
	"github.com/dynwatch/dynwatch/plan"
)

// A rule on a glob group watches a CRD installed after start within 10s, every
// object of it firing add; deleting the CRD stops the informer; re-creating it
// brings events back.
func TestCRDInstalledAfterStart(t *testing.T) {
	ns := namespace(t)
	gvr := schema.GroupVersionResource{Group: "later.example.com", Version: "v1", Resource: "gadgets"}
	r := startLive(t, fmt.Sprintf(`
apiVersion: dynwatch/v1alpha1
actions: [{name: stdout, log: {}}]
rules:
  - name: examples
    resources: [{group: "*.example.com", resource: "*"}]
    namespaces: [%s]
    actions: [stdout]
`, ns))
	if !strings.Contains(r.logs.String(), "rule selects no served resource yet") {
		t.Error("no warning for a rule that selects nothing at start")
	}
	for round := range 2 {
		installed := time.Now()
		create(t, crdGVR, "", crd(gvr.Group, gvr.Resource, "Gadget"))
		createCRObject(t, gvr, ns, fmt.Sprint("g", round), "Gadget")
		name := fmt.Sprint("g", round)
		got := r.out.waitMatch(t, "the add of "+name, 15*time.Second, func(p event.Payload) bool { return p.Name == name })
		if d := time.Since(installed); d > 10*time.Second {
			t.Errorf("round %d: first event %s after the CRD was created, want within 10s", round, d)
		}
		if got.Type != event.Add || got.Resource.Group != gvr.Group || got.Resource.Kind != "Gadget" {
			t.Errorf("round %d: payload %+v", round, got)
		}
		deleteCRD(t, gvr.Resource+"."+gvr.Group)
		waitUntil(t, "the informer to stop", 15*time.Second, func() bool { return !watching(r.w, gvr) })
	}
}

// 20 install/delete cycles of a CRD leave the goroutine count where it started.
func TestCRDCyclesLeakNoGoroutines(t *testing.T) {
	if testing.Short() {
		t.Skip("20 CRD cycles take a while")
	}
	ns := namespace(t)
	gvr := schema.GroupVersionResource{Group: "cycle.example.com", Version: "v1", Resource: "cycles"}
	r := startLive(t, fmt.Sprintf(`
apiVersion: dynwatch/v1alpha1
actions: [{name: stdout, log: {}}]
rules:
  - name: cycles
    resources: [{group: cycle.example.com, resource: cycles}]
    namespaces: [%s]
    actions: [stdout]
`, ns))
	settle := func() int {
		// Let goroutines of stopped informers and closed connections finish.
		time.Sleep(time.Second)
		runtime.GC()
		return runtime.NumGoroutine()
	}
	cycle := func(i int) {
		create(t, crdGVR, "", crd(gvr.Group, gvr.Resource, "Cycle"))
		waitUntil(t, "the informer to start", 15*time.Second, func() bool { return watching(r.w, gvr) && r.w.Manager().HasSynced() })
		deleteCRD(t, gvr.Resource+"."+gvr.Group)
		waitUntil(t, "the informer to stop", 15*time.Second, func() bool { return !watching(r.w, gvr) })
	}
	cycle(-1) // the first cycle opens connections and caches that later ones reuse
	base := settle()
	for i := range 20 {
		cycle(i)
	}
	after := settle()
	t.Logf("goroutines: %d after one warm-up cycle, %d after 20 more", base, after)
	if after > base+5 {
		t.Errorf("goroutines grew from %d to %d over 20 CRD cycles", base, after)
	}
	if n := r.w.Manager().Started(); n != 21 {
		t.Errorf("informers started = %d, want 21", n)
	}
}

// A user allowed only ConfigMaps: ConfigMap events are delivered, Secrets are
// reported as forbidden, once, and do not stop the ConfigMap watch.
func TestForbiddenResourceDoesNotStopOthers(t *testing.T) {
	ns := namespace(t)
	if err := env.GrantListWatch(t.Context(), "cm-reader", cmOnlyUser, "", "configmaps"); err != nil {
		t.Fatal(err)
	}
	cfg := env.UserConfig(cmOnlyToken)
	var secretAttempts atomic.Int64 // lists and watches of the forbidden secrets
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return testenv.RoundTripFunc(func(req *http.Request) (*http.Response, error) {
			if strings.HasSuffix(req.URL.Path, "/namespaces/"+ns+"/secrets") {
				secretAttempts.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	file, err := plan.Parse("t.yaml", []byte(fmt.Sprintf(`
apiVersion: dynwatch/v1alpha1
actions: [{name: stdout, log: {}}]
rules:
  - name: both
    resources: [{group: "", resource: configmaps}, {group: "", resource: secrets}]
    namespaces: [%s]
    actions: [stdout]
`, ns)))
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, file, informerClient(t, cfg), discovery.NewDiscoveryClientForConfigOrDie(cfg), infoLogs)
	waitUntil(t, "the forbidden report", 20*time.Second, func() bool {
		return strings.Contains(r.logs.String(), "reason=Forbidden") && strings.Contains(r.logs.String(), "secrets.v1 in namespace "+ns)
	})
	// A ConfigMap created before the configmaps list is served is part of the
	// state at start and fires nothing; wait for that list to be handled.
	waitUntil(t, "the configmaps informer to sync", 20*time.Second, func() bool {
		synced, _ := r.w.Manager().KeySynced(dyninformer.Key{GVR: cmGVR, Namespace: ns})
		return synced
	})
	create(t, cmGVR, ns, configMap(ns, "visible", map[string]any{"a": "b"}))
	create(t, secretGVR, ns, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "hidden"}})
	got := r.out.wait(t, 1, eventWait)
	if got[0].Name != "visible" || got[0].Resource.Resource != "configmaps" {
		t.Errorf("payload = %+v", got[0])
	}
	// Several retries of the forbidden list, each refused again.
	tried := secretAttempts.Load()
	waitUntil(t, "three more attempts at the forbidden secrets", 30*time.Second, func() bool { return secretAttempts.Load() >= tried+3 })
	r.quiet(t, "stdout")
	logs := r.logs.String()
	if n := strings.Count(logs, "cannot watch resource; retrying with backoff\" resource=\"secrets"); n != 1 {
		t.Errorf("forbidden reported %d times, want once:\n%s", n, logs)
	}
	unsynced := unsyncedWatches(r.w.Manager())
	key := dyninformer.Key{GVR: secretGVR, Namespace: ns}
	if err, ok := unsynced[key]; !ok || !apierrors.IsForbidden(err) {
		t.Errorf("unsynced = %v, want secrets forbidden", unsynced)
	}
	if len(r.out.snapshot()) != 1 {
		t.Errorf("payloads = %+v", r.out.snapshot())
	}
}

var secretGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// addStorageVersion serves the CRD name also in version, which becomes its
// storage (and preferred) version.
func addStorageVersion(t *testing.T, name, version string) {
	t.Helper()
	mutate(t, crdGVR, "", name, func(u *unstructured.Unstructured) {
		versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		old := versions[0].(map[string]any)
		old["storage"] = false
		v := map[string]any{"name": version, "served": true, "storage": true, "schema": old["schema"]}
		_ = unstructured.SetNestedSlice(u.Object, []any{old, v}, "spec", "versions")
	})
}

// When a CRD's preferred version changes, the watch moves to it, and the objects
// already seen do not fire again.
func TestWatchMovesToPreferredVersion(t *testing.T) {
	ns := namespace(t)
	const name = "movers.move.example.com"
	def := crd("move.example.com", "movers", "Mover")
	create(t, crdGVR, "", def)
	t.Cleanup(func() { _ = dyn(t).Resource(crdGVR).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	v1 := schema.GroupVersionResource{Group: "move.example.com", Version: "v1", Resource: "movers"}
	v2 := schema.GroupVersionResource{Group: "move.example.com", Version: "v2", Resource: "movers"}
	createCRObject(t, v1, ns, "m1", "Mover")
	r := startLive(t, fmt.Sprintf(`
apiVersion: dynwatch/v1alpha1
actions: [{name: stdout, log: {}}]
rules:
  - name: movers
    resources: [{group: move.example.com, resource: movers}]
    namespaces: [%s]
    onStart: all
    actions: [stdout]
`, ns))
	r.out.waitMatch(t, "m1 at start (onStart: all)", eventWait, func(p event.Payload) bool { return p.Name == "m1" })
	if !watching(r.w, v1) {
		t.Fatalf("not watching v1: %v", r.w.Manager().Watches())
	}
	addStorageVersion(t, name, "v2")
	waitUntil(t, "the watch to move to v2", 15*time.Second, func() bool { return watching(r.w, v2) && !watching(r.w, v1) })
	waitUntil(t, "the v2 informer to sync", 15*time.Second, r.w.Manager().HasSynced)
	createCRObject(t, v2, ns, "m2", "Mover")
	got := r.out.waitMatch(t, "m2", eventWait, func(p event.Payload) bool { return p.Name == "m2" })
	if got.Resource.Version != "v2" {
		t.Errorf("m2 came through %s, want v2", got.Resource.Version)
	}
	time.Sleep(500 * time.Millisecond)
	n := 0
	for _, p := range r.out.snapshot() {
		if p.Name == "m1" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("m1 fired %d times; the move must not fire it again", n)
	}
}

// An aggregated API that is down is reported (its group version fails
// discovery) and does not stop the other watches.
func TestAggregatedAPIDown(t *testing.T) {
	apisvc := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	_, err := dyn(t).Resource(apisvc).Create(t.Context(), unstructuredOf(map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1.down.example.com"},
		"spec": map[string]any{"group": "down.example.com", "version": "v1", "insecureSkipTLSVerify": true,
			"groupPriorityMinimum": int64(100), "versionPriority": int64(10),
			"service": map[string]any{"namespace": "default", "name": "nowhere"}},
	}), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dyn(t).Resource(apisvc).Delete(context.Background(), "v1.down.example.com", metav1.DeleteOptions{})
	})
	waitUntil(t, "discovery to report down.example.com/v1 as failed", 30*time.Second, func() bool {
		cat, err := dwdiscovery.Load(discovery.NewDiscoveryClientForConfigOrDie(env.Config))
		if err != nil {
			t.Fatalf("a partial discovery failure is fatal: %v", err)
		}
		_, failed := cat.Failed[schema.GroupVersion{Group: "down.example.com", Version: "v1"}]
		return failed && len(cat.Resources) > 0
	})
	ns := namespace(t)
	r := start(t, fmt.Sprintf(`
apiVersion: dynwatch/v1alpha1
actions: [{name: stdout, log: {}}]
rules:
  - name: cms
    resources: [{group: "", resource: configmaps}]
    namespaces: [%s]
    actions: [stdout]
  - name: down
    resources: [{group: down.example.com, resource: "*"}]
    actions: [stdout]
`, ns))
	if logs := r.logs.String(); !strings.Contains(logs, "discovery failed for a group version") || !strings.Contains(logs, "down.example.com/v1") {
		t.Errorf("the down API was not reported:\n%s", logs)
	}
	create(t, cmGVR, ns, configMap(ns, "still-works", nil))
	r.out.waitMatch(t, "a ConfigMap event", eventWait, func(p event.Payload) bool { return p.Name == "still-works" })
}

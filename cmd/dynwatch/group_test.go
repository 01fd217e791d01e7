package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// The end-to-end tests of group: the real binary, the real API server and a
// real webhook receiver that keeps every grouped delivery with when it came.

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// groupDelivery is one grouped delivery a receiver got.
type groupDelivery struct {
	at   time.Time
	id   string
	body event.GroupPayload
	raw  []byte
}

type groupReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []groupDelivery
}

func newGroupReceiver(t *testing.T) *groupReceiver {
	t.Helper()
	r := &groupReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		raw, _ := io.ReadAll(req.Body)
		var g event.GroupPayload
		if err := json.Unmarshal(raw, &g); err != nil || g.Group == nil || g.Count != len(g.Events) {
			t.Errorf("a delivery that is not a group payload (%v): %s", err, raw)
		}
		r.mu.Lock()
		r.got = append(r.got, groupDelivery{time.Now(), req.Header.Get("X-Dynwatch-Delivery-Id"), g, raw})
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *groupReceiver) deliveries() []groupDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// events is every event of every delivery, as "type name", in arrival order.
func (r *groupReceiver) events() []string {
	var out []string
	for _, d := range r.deliveries() {
		for _, p := range d.body.Events {
			out = append(out, string(p.Type)+" "+p.Name)
		}
	}
	return out
}

// createConfigMaps creates ConfigMaps name-0 … name-<n-1> in each namespace,
// eight at a time, labelled for the tests' rules.
func createConfigMaps(t *testing.T, d dynamic.Interface, n int, name string, nss ...string) {
	t.Helper()
	var wg sync.WaitGroup
	work := make(chan [2]string)
	for range 8 {
		wg.Go(func() {
			for w := range work {
				cm := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": w[1], "namespace": w[0], "labels": map[string]any{"dynwatch-test": "group"}},
					"data":     map[string]any{"k": "v"},
				}}
				if _, err := d.Resource(configMapsGVR).Namespace(w[0]).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
					t.Errorf("create %s/%s: %v", w[0], w[1], err)
				}
			}
		})
	}
	for _, ns := range nss {
		for i := range n {
			work <- [2]string{ns, fmt.Sprintf("%s-%d", name, i)}
		}
	}
	close(work)
	wg.Wait()
}

// groupConfig is a config of one rule on the labelled ConfigMaps of nss and
// one webhook action to url with the group given.
func groupConfig(t *testing.T, dir, url, group, state string, nss ...string) string {
	t.Helper()
	if state != "" {
		state = "state: {path: " + state + "}\n"
	}
	return writeConfig(t, dir, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
%sactions:
  - name: hook
    webhook: {url: %q, retry: {max: 1000, initialBackoff: 50ms, maxBackoff: 200ms}}
    group: %s
rules:
  - name: configs
    resources: [{kind: ConfigMap}]
    namespaces: [%s]
    labelSelector: dynwatch-test=group
    on: [add, update]
    actions: [hook]
`, state, url, group, strings.Join(nss, ", ")))
}

// 200 ConfigMaps applied at once in two namespaces, grouped by namespace:
// exactly two deliveries, one a namespace, every object in them once.
func TestGroupTwoHundredConfigMaps(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cp.Config)
	a, b := testenv.Namespace(t, d), testenv.Namespace(t, d)
	recv := newGroupReceiver(t)
	const wait = 15 * time.Second
	cfg := groupConfig(t, t.TempDir(), recv.srv.URL, fmt.Sprintf("{by: [namespace], wait: %s, max: 500}", wait), "", a, b)
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	p.waitLog("all informers synced", 30*time.Second)
	start := time.Now()
	createConfigMaps(t, d, 100, "cm", a, b)
	if took := time.Since(start); took > wait-2*time.Second {
		t.Skipf("creating 200 ConfigMaps took %s, too close to the group's wait (%s) to tell", took, wait)
	}
	waitUntil(t, "two deliveries", wait+30*time.Second, func() bool { return len(recv.deliveries()) >= 2 }, p.stderr.String)
	time.Sleep(2 * time.Second) // a third would come now if one were split off
	p.stopOK(syscall.SIGTERM)
	got := recv.deliveries()
	if len(got) != 2 {
		t.Fatalf("%d deliveries, want 2: %+v", len(got), got)
	}
	seen := map[string]int{}
	for _, g := range got {
		ns := g.body.Group["namespace"]
		if len(g.body.Group) != 1 || (ns != a && ns != b) || g.body.Count != 100 {
			t.Errorf("delivery of group %v, count %d; want one namespace's 100", g.body.Group, g.body.Count)
		}
		if len(g.body.Events) > 0 {
			// The group's key names its members: the first one's key, how
			// many, and a digest of every one's.
			first := g.body.Events[0].ID + ":configs"
			if !regexp.MustCompile(`^` + regexp.QuoteMeta(first) + `:group:100:[0-9a-f]{12}$`).MatchString(g.id) {
				t.Errorf("X-Dynwatch-Delivery-Id %q, want %s:group:100:<digest>", g.id, first)
			}
		}
		for _, e := range g.body.Events {
			if e.Namespace != ns || e.Type != event.Add {
				t.Errorf("group %s holds %s %s/%s", ns, e.Type, e.Namespace, e.Name)
			}
			seen[e.Namespace+"/"+e.Name]++
		}
		if early := g.at.Sub(start); early < wait-time.Second {
			t.Errorf("group %s delivered %s after the first create, before its wait (%s)", ns, early, wait)
		}
	}
	for _, ns := range []string{a, b} {
		for i := range 100 {
			if k := fmt.Sprintf("%s/cm-%d", ns, i); seen[k] != 1 {
				t.Errorf("%s delivered %d times, want once", k, seen[k])
			}
		}
	}
}

// After a group was delivered, its next event waits the interval: it is
// not delivered on the group's wait again.
func TestGroupIntervalHoldsBack(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := testenv.Namespace(t, d)
	recv := newGroupReceiver(t)
	const wait, interval = time.Second, 8 * time.Second
	cfg := groupConfig(t, t.TempDir(), recv.srv.URL, fmt.Sprintf("{by: [namespace], wait: %s, interval: %s}", wait, interval), "", ns)
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	p.waitLog("all informers synced", 30*time.Second)
	createConfigMaps(t, d, 1, "first", ns)
	waitUntil(t, "the first delivery", 30*time.Second, func() bool { return len(recv.deliveries()) == 1 }, p.stderr.String)
	first := recv.deliveries()[0].at
	createConfigMaps(t, d, 1, "later", ns)
	time.Sleep(wait + 2*time.Second)
	if n := len(recv.deliveries()); n != 1 {
		t.Fatalf("a later event was delivered on the wait (%s) rather than the interval (%s): %d deliveries", wait, interval, n)
	}
	waitUntil(t, "the later event, after the interval", interval+20*time.Second, func() bool { return len(recv.deliveries()) == 2 }, p.stderr.String)
	p.stopOK(syscall.SIGTERM)
	got := recv.deliveries()
	if gap := got[1].at.Sub(first); gap < interval-time.Second {
		t.Errorf("the later event came %s after the first delivery, before the interval %s", gap, interval)
	}
	if ev := recv.events(); !slices.Equal(ev, []string{"add first-0", "add later-0"}) {
		t.Errorf("events %v", ev)
	}
}

// kill -9 while a group waits, with state: after the restart the group is
// delivered, every event once, when its wait, counted from its first event
// before the kill, ends; not a wait after the restart.
func TestGroupKillNineDeliveredAfterRestart(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := testenv.Namespace(t, d)
	recv := newGroupReceiver(t)
	dir := t.TempDir()
	statePath := filepath.Join(dir, "state.db")
	const wait = 20 * time.Second
	cfg := groupConfig(t, dir, recv.srv.URL, fmt.Sprintf("{by: [namespace], wait: %s}", wait), statePath, ns)
	first := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	first.waitLog("state: baseline recorded", 30*time.Second)
	start := time.Now()
	createConfigMaps(t, d, 5, "cm", ns)
	waitUntil(t, "five events on disk", 15*time.Second, func() bool {
		return len(pendingOnDisk(t, statePath, "hook")) == 5
	}, first.stderr.String)
	if err := first.stop(syscall.SIGKILL); exitCode(err) != -1 {
		t.Fatalf("kill -9: exit %v", err)
	}
	if n := len(recv.deliveries()); n != 0 {
		t.Fatalf("%d deliveries before the group's wait ended", n)
	}
	time.Sleep(3 * time.Second) // the restart's own wait would end well after the first one
	restart := time.Now()
	second := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	waitUntil(t, "the group delivered after the restart", wait+30*time.Second, func() bool { return len(recv.deliveries()) > 0 }, second.stderr.String)
	time.Sleep(2 * time.Second)
	second.stopOK(syscall.SIGTERM)
	at := recv.deliveries()[0].at
	if at.Sub(start) < wait-time.Second || at.Sub(restart) > wait-2*time.Second {
		t.Errorf("delivered %s after the first event and %s after the restart: the wait (%s) must count from the first event", at.Sub(start), at.Sub(restart), wait)
	}
	ev := recv.events()
	sort.Strings(ev)
	want := []string{"add cm-0", "add cm-1", "add cm-2", "add cm-3", "add cm-4"}
	if !slices.Equal(ev, want) {
		t.Errorf("events after the restart %v, want each add once: %v", ev, want)
	}
}

var (
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	replicaSetsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
)

func podTemplate(image string) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "web", "image": image}}},
	}
}

func replicaSet(ns, name, image string, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "ReplicaSet",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"app": "web"}},
		"spec": map[string]any{
			"replicas": replicas, "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": podTemplate(image),
		},
	}}
}

func scale(t *testing.T, d dynamic.Interface, ns, name string, replicas int64) {
	t.Helper()
	ri := d.Resource(replicaSetsGVR).Namespace(ns)
	u, err := ri.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, replicas, "spec", "replicas")
	if _, err := ri.Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A Deployment rollout arrives as one message: the Deployment's template
// changes, and its ReplicaSets change as the deployment controller changes
// them (the test plays the controller: the test API server runs none).
func TestGroupDeploymentRollout(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := testenv.Namespace(t, d)
	dep := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": ns},
		"spec": map[string]any{
			"replicas": int64(3), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": podTemplate("web:1"),
		},
	}}
	if _, err := d.Resource(deploymentsGVR).Namespace(ns).Create(t.Context(), dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Resource(replicaSetsGVR).Namespace(ns).Create(t.Context(), replicaSet(ns, "web-1", "web:1", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	recv := newGroupReceiver(t)
	cfg := writeConfig(t, t.TempDir(), fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
actions:
  - name: chat
    webhook: {url: %q}
    group: {by: [rule, namespace], wait: 6s}
rules:
  - name: rollout
    resources: [{group: apps, resource: deployments}, {group: apps, resource: replicasets}]
    namespaces: [%s]
    changed: [spec.template, spec.replicas]
    actions: [chat]
`, recv.srv.URL, ns))
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	p.waitLog("all informers synced", 30*time.Second)
	u, err := d.Resource(deploymentsGVR).Namespace(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, podTemplate("web:2"), "spec", "template")
	if _, err := d.Resource(deploymentsGVR).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Resource(replicaSetsGVR).Namespace(ns).Create(t.Context(), replicaSet(ns, "web-2", "web:2", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		name string
		n    int64
	}{{"web-1", 2}, {"web-2", 2}, {"web-1", 1}, {"web-2", 3}, {"web-1", 0}} {
		scale(t, d, ns, s.name, s.n)
	}
	waitUntil(t, "the rollout's message", 40*time.Second, func() bool { return len(recv.deliveries()) > 0 }, p.stderr.String)
	time.Sleep(2 * time.Second)
	p.stopOK(syscall.SIGTERM)
	got := recv.deliveries()
	if len(got) != 1 {
		t.Fatalf("%d messages, want the rollout as one", len(got))
	}
	var lines []string
	for _, e := range got[0].body.Events {
		lines = append(lines, fmt.Sprintf("%s %s %s", e.Type, e.Resource.Kind, e.Name))
	}
	want := []string{
		"update Deployment web", "add ReplicaSet web-2",
		"update ReplicaSet web-1", "update ReplicaSet web-2", "update ReplicaSet web-1", "update ReplicaSet web-2", "update ReplicaSet web-1",
	}
	// Each object's events in order; the objects' events interleave as two
	// watches (deployments, replicasets) brought them.
	for _, obj := range []string{"Deployment web", "ReplicaSet web-1", "ReplicaSet web-2"} {
		of := func(ls []string) []string {
			return slices.DeleteFunc(slices.Clone(ls), func(l string) bool { return !strings.HasSuffix(l, " "+obj) })
		}
		if g, w := of(lines), of(want); !slices.Equal(g, w) {
			t.Errorf("%s: events %v, want %v", obj, g, w)
		}
	}
	if len(lines) != len(want) {
		t.Errorf("the rollout's events\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if g := got[0].body.Group; g["rule"] != "rollout" || g["namespace"] != ns {
		t.Errorf("group %v", g)
	}
}

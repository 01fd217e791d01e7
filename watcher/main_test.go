package watcher

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
	"github.com/dynwatch/dynwatch/plan"
)

// A token user that tests give narrower RBAC.
const (
	cmOnlyUser  = "cm-only"
	cmOnlyToken = "cm-only-token"
)

func unstructuredOf(obj map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: obj}
}

// env is the real control plane every test in this package shares.
var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start(testenv.Options{Users: []testenv.User{{Name: cmOnlyUser, Token: cmOnlyToken}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	stopWest()
	env.Stop()
	os.Exit(code)
}

var (
	nsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	cmGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

func dyn(t testing.TB) dynamic.Interface {
	t.Helper()
	return dynamic.NewForConfigOrDie(env.Config)
}

// namespace creates a namespace with a unique name for one test.
func namespace(t testing.TB) string {
	t.Helper()
	return testenv.Namespace(t, dyn(t))
}

func create(t testing.TB, gvr schema.GroupVersionResource, ns string, obj map[string]any) *unstructured.Unstructured {
	t.Helper()
	u, err := dyn(t).Resource(gvr).Namespace(ns).Create(context.Background(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", gvr.Resource, err)
	}
	return u
}

// mutate reads an object, changes it with f, and writes it back.
func mutate(t testing.TB, gvr schema.GroupVersionResource, ns, name string, f func(u *unstructured.Unstructured)) *unstructured.Unstructured {
	t.Helper()
	ri := dyn(t).Resource(gvr).Namespace(ns)
	u, err := ri.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f(u)
	u, err = ri.Update(context.Background(), u, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func remove(t testing.TB, gvr schema.GroupVersionResource, ns, name string) {
	t.Helper()
	if err := dyn(t).Resource(gvr).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

var configMap = testenv.ConfigMap

// lines collects what a log action writes, one payload per line.
type lines struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	got  []event.Payload
	raw  []string
	cond *sync.Cond
}

func newLines() *lines {
	l := &lines{}
	l.cond = sync.NewCond(&l.mu)
	return l
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	sc := bufio.NewScanner(bytes.NewReader(l.buf.Bytes()))
	sc.Buffer(nil, 1<<22)
	l.got, l.raw = nil, nil
	for sc.Scan() {
		var pl event.Payload
		if err := json.Unmarshal(sc.Bytes(), &pl); err != nil {
			return 0, fmt.Errorf("log line is not a payload: %v: %s", err, sc.Text())
		}
		l.got = append(l.got, pl)
		l.raw = append(l.raw, sc.Text())
	}
	l.cond.Broadcast()
	return len(p), nil
}

// wait returns once n payloads arrived, failing the test after timeout.
func (l *lines) wait(t testing.TB, n int, timeout time.Duration) []event.Payload {
	t.Helper()
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() { l.cond.Broadcast() })
	defer timer.Stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.got) < n && time.Now().Before(deadline) {
		l.cond.Wait()
	}
	if len(l.got) < n {
		t.Fatalf("got %d payloads after %s, want %d:\n%s", len(l.got), timeout, n, strings.Join(l.raw, "\n"))
	}
	return append([]event.Payload(nil), l.got...)
}

// waitMatch returns the first payload for which match holds, failing the test
// when none arrives within timeout.
func (l *lines) waitMatch(t testing.TB, what string, timeout time.Duration, match func(event.Payload) bool) event.Payload {
	t.Helper()
	var found *event.Payload
	waitUntil(t, what, timeout, func() bool {
		for _, p := range l.snapshot() {
			if match(p) {
				found = &p
				return true
			}
		}
		return false
	})
	return *found
}

func (l *lines) rawLines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.raw...)
}

func (l *lines) snapshot() []event.Payload {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]event.Payload(nil), l.got...)
}

// watchCounter counts the watch requests that reach the API server, by path.
type watchCounter struct {
	mu     sync.Mutex
	counts map[string]int
	total  atomic.Int64
}

func (w *watchCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return testenv.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" {
			w.mu.Lock()
			w.counts[r.URL.Path]++
			w.mu.Unlock()
			w.total.Add(1)
		}
		return rt.RoundTrip(r)
	})
}

// others counts the watch requests on paths other than the given ones.
func (w *watchCounter) others(paths ...string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for p, c := range w.counts {
		if !slices.Contains(paths, p) {
			n += c
		}
	}
	return n
}

func (w *watchCounter) get(path string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts[path]
}

// running is a watcher started by a test.
type running struct {
	w       *Watcher
	out     *lines
	logs    *testenv.Buffer
	watches *watchCounter
	cancel  context.CancelFunc
	done    chan error
}

// start runs a watcher with config (YAML) until the test ends, and waits for its
// informers to sync. Its stdout log action writes to r.out; its own logs go to
// the test log at info level.
func start(t testing.TB, config string) *running {
	t.Helper()
	return startWith(t, config, infoLogs)
}

const (
	infoLogs  = slog.LevelInfo
	debugLogs = slog.LevelDebug
)

// startWith is start with a log level; the watcher's own logs are also kept in r.logs.
func startWith(t testing.TB, config string, level slog.Level) *running {
	t.Helper()
	r := startLiveWith(t, config, level)
	syncCtx, cancelSync := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelSync()
	// Run sets the watched set before it starts informers; wait for both.
	for len(r.w.Manager().Watches()) == 0 && syncCtx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	if !r.w.Manager().WaitForSync(syncCtx) {
		t.Fatalf("informers did not sync: %v", unsyncedWatches(r.w.Manager()))
	}
	return r
}

// startLive starts a watcher whose rules may select nothing yet, and waits until
// it follows CRDs.
func startLive(t testing.TB, config string) *running {
	t.Helper()
	return startLiveWith(t, config, infoLogs)
}

func startLiveWith(t testing.TB, config string, level slog.Level) *running {
	t.Helper()
	file, err := plan.Parse(t.Name()+".yaml", []byte(config))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	wc := &watchCounter{counts: map[string]int{}}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(wc.wrap)
	r := run(t, file, informerClient(t, cfg), discovery.NewDiscoveryClientForConfigOrDie(env.Config), level)
	r.watches = wc
	waitUntil(t, "the watcher to follow CRDs", 30*time.Second, r.w.Synced)
	return r
}

// run runs a watcher of file with the given clients until the test ends.
func run(t testing.TB, file *plan.File, dc *dyninformer.Client, disc discovery.DiscoveryInterface, level slog.Level) *running {
	t.Helper()
	out := newLines()
	logs := &testenv.Buffer{}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}, logs), &slog.HandlerOptions{Level: level}))
	w, err := New(file, dc, disc, Options{Logger: log, Stdout: out})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{w: w, out: out, logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- w.Run(ctx) }()
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("the watcher's Run: %v", err)
		}
	})
	return r
}

// stop ends the watcher's run and returns what Run returned; it is called
// once, when the test ends.
func (r *running) stop() error {
	r.cancel()
	select {
	case err := <-r.done:
		return err
	case <-time.After(30 * time.Second):
		panic("watcher did not stop within 30s")
	}
}

// settle waits for the payload of the object named sentinel, created after
// the events under test in the same watch (so everything the watch saw
// before it has been handled), then for the action's queue to empty (so
// everything handled has been delivered). It returns the payloads but the
// sentinel's: a check that nothing else fired can then not pass by being early.
func (r *running) settle(t testing.TB, action, sentinel string) []event.Payload {
	t.Helper()
	r.out.waitMatch(t, "the sentinel "+sentinel, eventWait, func(p event.Payload) bool { return p.Name == sentinel })
	r.quiet(t, action)
	var out []event.Payload
	for _, p := range r.out.snapshot() {
		if p.Name != sentinel {
			out = append(out, p)
		}
	}
	return out
}

// quiet waits until nothing is queued or in flight on the action.
func (r *running) quiet(t testing.TB, action string) {
	t.Helper()
	waitUntil(t, "the "+action+" queue to empty", eventWait, func() bool { return r.w.Queue(action).Len() == 0 })
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

var (
	getOpts  = metav1.GetOptions{}
	listOpts = metav1.ListOptions{}
)

var waitUntil = testenv.WaitFor

// unsyncedWatches returns, from the manager's statuses, the watches that have
// not finished their initial list, with the last error each one saw (nil if
// none).
func unsyncedWatches(m *dyninformer.Manager) map[dyninformer.Key]error {
	out := map[dyninformer.Key]error{}
	for _, st := range m.Statuses() {
		if !st.Synced {
			out[st.Key] = st.Err
		}
	}
	return out
}

// informerClient returns the client informers list and watch with.
func informerClient(t testing.TB, cfg *rest.Config) *dyninformer.Client {
	t.Helper()
	c, err := dyninformer.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// receiver is a loopback webhook receiver that can be down (503) and records
// what it accepted.
type receiver struct {
	srv  *httptest.Server
	down atomic.Bool
	mu   sync.Mutex
	got  []event.Payload
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rc.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var pl event.Payload
		if err := json.NewDecoder(r.Body).Decode(&pl); err != nil {
			t.Errorf("bad body: %v", err)
		}
		rc.mu.Lock()
		rc.got = append(rc.got, pl)
		rc.mu.Unlock()
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) payloads() []event.Payload {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]event.Payload(nil), rc.got...)
}

func (rc *receiver) config(ns, timeout string) string {
	return fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
shutdownGrace: 500ms
actions: [{name: hook, webhook: {url: %q, timeout: %s, retry: {max: 100, initialBackoff: 50ms, maxBackoff: 200ms}}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [hook]}]
`, rc.srv.URL, timeout, ns)
}

func reload(t *testing.T, r *running, config string) {
	t.Helper()
	file, err := plan.Parse(t.Name()+".yaml", []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.w.Reload(file); err != nil {
		t.Fatal(err)
	}
}

// hookConfig is a config whose rule on ConfigMaps in ns sends to the named
// webhook actions, each to its receiver; timeout sets every action's timeout
// (a change of it replaces the action's queue). The shutdown grace is long:
// a queue that drains at the end would deliver.
func hookConfig(ns, timeout string, hooks map[string]*receiver, names ...string) string {
	actions := ""
	for _, n := range names {
		actions += fmt.Sprintf("  - {name: %s, webhook: {url: %q, timeout: %s, retry: {max: 1000, initialBackoff: 50ms, maxBackoff: 200ms}}}\n", n, hooks[n].srv.URL, timeout)
	}
	return fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
shutdownGrace: 30s
actions:
%srules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [%s]}]
`, actions, ns, strings.Join(names, ", "))
}

func names(ps []event.Payload) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name + " " + string(p.Type)
	}
	return out
}

// crd returns a namespaced CRD of group with one version v1 and a free-form spec.
func crd(group, plural, kind string) map[string]any {
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}
}

// createCRObject creates an object of a CRD that may not be served yet, retrying
// while the API server still answers 404.
func createCRObject(t *testing.T, gvr schema.GroupVersionResource, ns, name, kind string) {
	t.Helper()
	obj := map[string]any{"apiVersion": gvr.Group + "/" + gvr.Version, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{"n": int64(1)}}
	waitUntil(t, "the CRD to be served", 30*time.Second, func() bool {
		_, err := dyn(t).Resource(gvr).Namespace(ns).Create(t.Context(), unstructuredOf(obj), metav1.CreateOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("create %s: %v", name, err)
		}
		return err == nil
	})
}

// deleteCRD deletes a CRD and waits until it is gone.
func deleteCRD(t *testing.T, name string) {
	t.Helper()
	if err := dyn(t).Resource(crdGVR).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the CRD to be gone", 60*time.Second, func() bool {
		_, err := dyn(t).Resource(crdGVR).Get(t.Context(), name, getOpts)
		return apierrors.IsNotFound(err)
	})
}

func watching(w *Watcher, gvr schema.GroupVersionResource) bool {
	for _, k := range w.Manager().Watches() {
		if k.GVR == gvr {
			return true
		}
	}
	return false
}

package watcher

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/state"
)

// cutter is a transport that can cut the running watches and hold new ones
// until it lets them go; it counts the lists (initial or relists).
type cutter struct {
	mu      sync.Mutex
	held    chan struct{} // non-nil while watches are held
	bodies  []io.Closer
	relists int
}

func (c *cutter) wrap(rt http.RoundTripper) http.RoundTripper {
	return testenv.RoundTripFunc(func(req *http.Request) (*http.Response, error) {
		q := req.URL.Query()
		watch := q.Get("watch") == "true" || q.Get("watch") == "1"
		c.mu.Lock()
		if !watch || q.Get("sendInitialEvents") == "true" {
			c.relists++
		}
		held := c.held
		c.mu.Unlock()
		if watch && held != nil {
			select {
			case <-held:
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		}
		resp, err := rt.RoundTrip(req)
		if err == nil && watch {
			c.mu.Lock()
			c.bodies = append(c.bodies, resp.Body)
			c.mu.Unlock()
		}
		return resp, err
	})
}

// cut ends every running watch and holds the ones that follow.
func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = make(chan struct{})
	for _, b := range c.bodies {
		_ = b.Close()
	}
	c.bodies = nil
}

// release lets held watches go on.
func (c *cutter) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.held)
	c.held = nil
}

func (c *cutter) lists() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.relists
}

// An object deleted and re-created under its name while the watch was down,
// found by the relist after 410 Gone, is a delete of the old uid and an add of
// the new one, never an update between two uids; an object deleted while the
// watch was down is a delete (the informer's tombstone); and the state's
// records stay exact, so that the next start replays nothing.
func TestRelistAfterGapSplitsReplacedObject(t *testing.T) {
	// Without the watch cache, a watch that resumes from a compacted
	// resourceVersion gets 410 Gone from etcd itself.
	cp, err := testenv.Start(testenv.Options{APIServerArgs: []string{"--watch-cache=false"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := "relist"
	if _, err := d.Resource(nsGVR).Create(t.Context(), unstructuredOf(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(t.TempDir(), "state.db")
	config := cmsConfig(dbPath, ns)
	cmCreate := func(name string) string {
		u, err := d.Resource(cmGVR).Namespace(ns).Create(t.Context(), unstructuredOf(configMap(ns, name, nil)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(u.GetUID())
	}

	cut := &cutter{}
	r, stop := runWithState(t, cp, config, dbPath, cut.wrap)
	waitUntil(t, "the baseline", 30*time.Second, func() bool { return len(r.w.durable.listingKeys()) == 0 && r.w.Synced() })
	uid1 := cmCreate("x")
	r.out.waitMatch(t, "the add of x", eventWait, func(p event.Payload) bool { return p.UID == uid1 })
	uidY := cmCreate("y")
	r.out.waitMatch(t, "the add of y", eventWait, func(p event.Payload) bool { return p.UID == uidY })

	cut.cut()
	time.Sleep(300 * time.Millisecond)
	if err := d.Resource(cmGVR).Namespace(ns).Delete(t.Context(), "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	uid2 := cmCreate("x")
	if err := d.Resource(cmGVR).Namespace(ns).Delete(t.Context(), "y", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cp.CompactEtcd(t.Context()); err != nil {
		t.Fatal(err)
	}
	lists := cut.lists()
	cut.release()
	r.out.waitMatch(t, "the add of the new x", eventWait, func(p event.Payload) bool { return p.UID == uid2 })
	r.out.waitMatch(t, "the delete of y", eventWait, func(p event.Payload) bool { return p.UID == uidY && p.Type == event.Delete })
	if cut.lists() == lists {
		t.Fatal("no relist happened: the test did not exercise the 410 path")
	}
	var seq, seqY []string
	for _, p := range r.out.snapshot() {
		if p.Name == "y" {
			seqY = append(seqY, fmt.Sprintf("%s %s", p.Type, p.UID))
			continue
		}
		seq = append(seq, fmt.Sprintf("%s %s", p.Type, p.UID))
	}
	want := []string{"add " + uid1, "delete " + uid1, "add " + uid2}
	if fmt.Sprint(seq) != fmt.Sprint(want) {
		t.Errorf("events of x %v, want %v", seq, want)
	}
	if want := []string{"add " + uidY, "delete " + uidY}; fmt.Sprint(seqY) != fmt.Sprint(want) {
		t.Errorf("events of y %v, want %v", seqY, want)
	}
	stop()

	// The next start finds the records exact: nothing to replay.
	r2, stop2 := runWithState(t, cp, config, dbPath, nil)
	waitUntil(t, "the comparison with the records", 30*time.Second, func() bool { return r2.w.Synced() && len(r2.w.durable.listingKeys()) == 0 })
	r2.quiet(t, "out") // what the comparison found is queued by now
	stop2()
	if got := r2.out.snapshot(); len(got) != 0 {
		t.Errorf("the restart replayed %+v", got)
	}
}

// runWithState runs a watcher with restart state on dbPath against cp; wrap,
// when set, wraps the informers' transport. stop stops it and closes the state.
func runWithState(t *testing.T, cp *testenv.Env, config, dbPath string, wrap func(http.RoundTripper) http.RoundTripper) (*running, func()) {
	t.Helper()
	file, err := plan.Parse(t.Name()+".yaml", []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(cp.Config)
	if wrap != nil {
		cfg.Wrap(wrap)
	}
	store, err := state.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	out := newLines()
	logs := &testenv.Buffer{}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}, logs), &slog.HandlerOptions{Level: slog.LevelInfo}))
	w, err := New(file, informerClient(t, cfg), discovery.NewDiscoveryClientForConfigOrDie(cp.Config), Options{Logger: log, Stdout: out, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("the watcher's Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the watcher did not stop within 30s")
			}
			if err := store.Close(); err != nil {
				t.Errorf("close the state file: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return &running{w: w, out: out, logs: logs, cancel: cancel, done: done}, stop
}

// holdPaths is a transport that holds the requests whose path contains one of
// its markers until released.
type holdPaths struct {
	marker  string
	release chan struct{}
}

func (h *holdPaths) wrap(rt http.RoundTripper) http.RoundTripper {
	return testenv.RoundTripFunc(func(req *http.Request) (*http.Response, error) {
		if strings.Contains(req.URL.Path, h.marker) {
			select {
			case <-h.release:
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		}
		return rt.RoundTrip(req)
	})
}

// With state, what changes while a watch moves to another version (between the
// old informer stopping and the new one listing) is found by comparing the new
// list with the records, and fires as live events; what did not change fires
// nothing.
func TestVersionMoveDiffsAgainstRecords(t *testing.T) {
	ns := namespace(t)
	const name = "shifters.shift.example.com"
	create(t, crdGVR, "", crd("shift.example.com", "shifters", "Shifter"))
	t.Cleanup(func() { _ = dyn(t).Resource(crdGVR).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	v1 := schema.GroupVersionResource{Group: "shift.example.com", Version: "v1", Resource: "shifters"}
	v2 := schema.GroupVersionResource{Group: "shift.example.com", Version: "v2", Resource: "shifters"}
	for _, n := range []string{"same", "changed", "gone"} {
		createCRObject(t, v1, ns, n, "Shifter")
	}
	dbPath := filepath.Join(t.TempDir(), "state.db")
	hold := &holdPaths{marker: "/shift.example.com/v2/", release: make(chan struct{})}
	r, _ := runWithState(t, env, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions: [{name: out, log: {}}]
rules: [{name: shifters, resources: [{group: shift.example.com, resource: shifters}], namespaces: [%s], actions: [out]}]
`, dbPath, ns), dbPath, hold.wrap)
	waitUntil(t, "the baseline", 30*time.Second, func() bool {
		return watching(r.w, v1) && r.w.Synced() && len(r.w.durable.listingKeys()) == 0
	})
	addStorageVersion(t, name, "v2")
	waitUntil(t, "the watch to move to v2", 15*time.Second, func() bool { return watching(r.w, v2) && !watching(r.w, v1) })
	// The v2 informer's list is held: these changes fall in the gap.
	mutate(t, v2, ns, "changed", func(u *unstructured.Unstructured) { _ = unstructured.SetNestedField(u.Object, int64(2), "spec", "n") })
	remove(t, v2, ns, "gone")
	createCRObject(t, v2, ns, "new", "Shifter")
	close(hold.release)
	waitUntil(t, "the v2 list to be compared", 15*time.Second, func() bool { return r.w.Synced() && len(r.w.durable.listingKeys()) == 0 })
	r.out.wait(t, 3, eventWait)
	r.quiet(t, "out") // the comparison is done: what it found is queued
	got := map[string]string{}
	for _, p := range r.out.snapshot() {
		if p.Replay {
			t.Errorf("a change during a move is live, not a replay: %+v", p)
		}
		got[p.Name] += string(p.Type)
	}
	if want := map[string]string{"changed": "update", "gone": "delete", "new": "add"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// With state, memory holds a window of each action's queue (its queueSize,
// at most 1 000) while the receiver is down; the rest waits on disk, and
// everything arrives, once and in order per object, when the receiver is
// back, also after a restart with a backlog larger than the window. The
// window is checked by the queue's high-water mark, not by sampling.
func TestStateKeepsMemoryBounded(t *testing.T) {
	for _, c := range []struct {
		name               string
		queueSize, objects int
		window             int // the documented bound
	}{
		{"queueSize 20", 20, 60, 20},
		{"queueSize 5000 holds 1000", 5000, 600, 1000},
	} {
		t.Run(c.name, func(t *testing.T) { testMemoryBounded(t, c.queueSize, c.objects, c.window) })
	}
}

func testMemoryBounded(t *testing.T, queueSize, objects, window int) {
	ns := namespace(t)
	rc := newReceiver(t)
	rc.down.Store(true)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	config := fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
shutdownGrace: 100ms
actions: [{name: hook, queueSize: %d, webhook: {url: %q, retry: {max: 1000, initialBackoff: 50ms, maxBackoff: 200ms}}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [hook]}]
`, dbPath, queueSize, rc.srv.URL, ns)
	onDisk := func(r *running, n int) {
		t.Helper()
		var counts map[string]int
		waitUntil(t, fmt.Sprintf("%d events on disk", n), 2*eventWait, func() bool {
			var err error
			if counts, err = r.w.durable.store.PendingActions(); err != nil {
				t.Fatal(err)
			}
			return counts["hook"] == n
		})
	}
	r, stop := runWithState(t, env, config, dbPath, nil)
	waitUntil(t, "the baseline", 30*time.Second, func() bool { return r.w.Synced() && len(r.w.durable.listingKeys()) == 0 })
	addAndUpdate(t, ns, 0, objects/2) // two events per object: their order counts
	onDisk(r, objects)
	first := r.w.Queue("hook").Stats()
	stop() // a restart with a backlog as large as the window or larger
	r2, _ := runWithState(t, env, config, dbPath, nil)
	waitUntil(t, "the comparison with the records", 30*time.Second, func() bool { return r2.w.Synced() && len(r2.w.durable.listingKeys()) == 0 })
	addAndUpdate(t, ns, objects/2, objects)
	onDisk(r2, 2*objects)
	second := r2.w.Queue("hook").Stats()
	if first.Peak > uint64(window) || second.Peak != uint64(window) || first.Dropped+second.Dropped != 0 {
		t.Errorf("memory held at most %d deliveries, then %d after the restart, %d dropped; want at most %d, then exactly %d, none dropped",
			first.Peak, second.Peak, first.Dropped+second.Dropped, window, window)
	}
	rc.down.Store(false)
	waitUntil(t, "every event", 2*eventWait, func() bool { return len(rc.payloads()) >= 2*objects })
	r2.quiet(t, "hook")
	seq := map[string]string{}
	for _, p := range rc.payloads() {
		seq[p.Name] += string(p.Type) + " "
	}
	if len(seq) != objects || len(rc.payloads()) != 2*objects {
		t.Errorf("%d payloads for %d objects (%d distinct): duplicates or losses", len(rc.payloads()), objects, len(seq))
	}
	for name, got := range seq {
		if got != "add update " {
			t.Errorf("%s: delivered %q, want add then update", name, got)
		}
	}
}

// addAndUpdate creates ConfigMaps cm-from … cm-(to-1) and then labels each,
// eight at a time.
func addAndUpdate(t *testing.T, ns string, from, to int) {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	cms := dynamic.NewForConfigOrDie(cfg).Resource(cmGVR).Namespace(ns)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := from + w; i < to; i += 8 {
				name := fmt.Sprint("cm-", i)
				if _, err := cms.Create(context.Background(), unstructuredOf(configMap(ns, name, nil)), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
				if _, err := cms.Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"labels":{"updated":"yes"}}}`), metav1.PatchOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

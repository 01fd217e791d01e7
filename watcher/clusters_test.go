package watcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/state"
)

// west is a second control plane of its own (etcd and API server), started
// by the first test that needs it and stopped by TestMain: the package's env
// is the cluster "east".
var (
	westOnce sync.Once
	westEnv  *testenv.Env
	westErr  error
)

func west(t *testing.T) *testenv.Env {
	t.Helper()
	westOnce.Do(func() { westEnv, westErr = testenv.Start(testenv.Options{}) })
	if westErr != nil {
		t.Fatal(westErr)
	}
	return westEnv
}

// stopWest stops the second control plane, if a test started it.
func stopWest() {
	if westEnv != nil {
		westEnv.Stop()
	}
}

// link is a cluster's connection as dynwatch sees it: it counts the list
// requests that reach the cluster and can be cut (every request fails and
// the open watches break), as a network partition would.
type link struct {
	cut   atomic.Bool
	lists atomic.Int64
	// auths counts the requests by their Authorization header.
	auths sync.Map // string -> *atomic.Int64
	mu    sync.Mutex
	open  map[*cutBody]bool
}

var errCut = errors.New("the link to the cluster is cut")

func (l *link) wrap(rt http.RoundTripper) http.RoundTripper {
	return testenv.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		if l.cut.Load() {
			return nil, errCut
		}
		n, _ := l.auths.LoadOrStore(r.Header.Get("Authorization"), &atomic.Int64{})
		n.(*atomic.Int64).Add(1)
		q := r.URL.Query()
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/configmaps") && (q.Get("watch") == "" || q.Get("sendInitialEvents") == "true") {
			l.lists.Add(1) // an informer's list: a plain one, or a watch-list stream
		}
		resp, err := rt.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		b := &cutBody{ReadCloser: resp.Body, l: l}
		l.mu.Lock()
		l.open[b] = true
		l.mu.Unlock()
		resp.Body = b
		return resp, nil
	})
}

// setCut cuts the link (closing every open response, watches included) or
// mends it.
func (l *link) setCut(cut bool) {
	l.cut.Store(cut)
	if !cut {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for b := range l.open {
		_ = b.ReadCloser.Close()
	}
	clear(l.open)
}

type cutBody struct {
	io.ReadCloser
	l *link
}

func (b *cutBody) Close() error {
	b.l.mu.Lock()
	delete(b.l.open, b)
	b.l.mu.Unlock()
	return b.ReadCloser.Close()
}

// clusterRun is a watcher of two clusters: east (env) and west.
type clusterRun struct {
	*running
	links map[string]*link
	end   func() // stops the watcher and closes its state file, once
	// envs are the control planes the clusters reach, by name; a name
	// missing has clients that cannot be built (setEnv adds it).
	envMu sync.Mutex
	envs  map[string]*testenv.Env
}

// connectFile builds the clients of a cluster from its kubeconfig file, as
// dynwatch's command does, through the cluster's link.
func (cr *clusterRun) connectFile(spec config.ClusterSpec) (*dyninformer.Client, discovery.DiscoveryInterface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", spec.Kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	cr.envMu.Lock()
	l := cr.links[spec.Name]
	if l == nil {
		l = &link{open: map[*cutBody]bool{}}
		cr.links[spec.Name] = l
	}
	cr.envMu.Unlock()
	cfg.Wrap(l.wrap)
	c, err := dyninformer.NewClient(cfg)
	if err != nil {
		return nil, nil, err
	}
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	return c, d, err
}

// setEnv makes the named cluster's clients buildable from now on, reaching e.
func (cr *clusterRun) setEnv(name string, e *testenv.Env) {
	cr.envMu.Lock()
	defer cr.envMu.Unlock()
	cr.envs[name] = e
	if cr.links[name] == nil {
		cr.links[name] = &link{open: map[*cutBody]bool{}}
	}
}

// runClusters runs a watcher of config, whose clusters named east and west
// reach env and west's control plane through links; dbPath "" runs without
// state. It returns at once: a cluster may be down.
func runClusters(t *testing.T, yaml, dbPath string, westEnv *testenv.Env) *clusterRun {
	t.Helper()
	file, err := plan.Parse(t.Name()+".yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	cr := &clusterRun{links: map[string]*link{"east": {open: map[*cutBody]bool{}}, "west": {open: map[*cutBody]bool{}}}}
	cr.envs = map[string]*testenv.Env{"east": env, "west": westEnv}
	connect := func(spec config.ClusterSpec) (*dyninformer.Client, discovery.DiscoveryInterface, error) {
		if spec.Kubeconfig != "" {
			return cr.connectFile(spec)
		}
		cr.envMu.Lock()
		e, l := cr.envs[spec.Name], cr.links[spec.Name]
		cr.envMu.Unlock()
		if e == nil {
			return nil, nil, fmt.Errorf("no cluster %s here", spec.Name)
		}
		cfg := rest.CopyConfig(e.Config)
		cfg.Wrap(l.wrap)
		c, err := dyninformer.NewClient(cfg)
		if err != nil {
			return nil, nil, err
		}
		d, err := discovery.NewDiscoveryClientForConfig(cfg)
		return c, d, err
	}
	var store *state.Store
	if dbPath != "" {
		if store, err = state.Open(dbPath); err != nil {
			t.Fatal(err)
		}
	}
	out, logs := newLines(), &testenv.Buffer{}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}, logs), &slog.HandlerOptions{Level: slog.LevelInfo}))
	w, err := New(file, nil, nil, Options{Logger: log, Stdout: out, Store: store, Connect: connect, DiscoveryRefresh: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cr.running = &running{w: w, out: out, logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { cr.done <- w.Run(ctx) }()
	var once sync.Once
	cr.end = func() {
		once.Do(func() {
			if err := cr.stop(); err != nil {
				t.Errorf("the watcher's Run: %v", err)
			}
			if store != nil {
				_ = store.Close()
			}
		})
	}
	t.Cleanup(cr.end)
	return cr
}

// synced waits until the named cluster's informers have listed.
func (cr *clusterRun) synced(t *testing.T, name string) {
	t.Helper()
	testenv.WaitFor(t, name+"'s informers to sync", 30*time.Second, func() bool {
		m := cr.w.ClusterManager(name)
		return m != nil && len(m.Watches()) > 0 && m.HasSynced() && (cr.w.durable == nil || len(cr.w.durable.listingKeys()) == 0)
	})
}

// up reports whether the watcher says the named cluster answers.
func (cr *clusterRun) up(name string) bool {
	for _, c := range cr.w.Clusters() {
		if c.Name == name {
			return c.Up
		}
	}
	return false
}

func clustersConfig(ns, dbPath, clusters string) string {
	st := ""
	if dbPath != "" {
		st = "state: {path: " + dbPath + "}\n"
	}
	c := fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
%sclusters:
%sactions:
  - name: out
    log: {}
rules:
  - name: everywhere
    namespaces: [%[3]s]
    resources: [{group: "", resource: configmaps}]
    actions: [out]
`, st, clusters, ns)
	if strings.Contains(clusters, "west") {
		c += fmt.Sprintf(`  - name: west-only
    clusters: [west]
    namespaces: [%s]
    resources: [{group: "", resource: configmaps}]
    actions: [out]
`, ns)
	}
	return c
}

const bothClusters = "  - name: east\n  - name: west\n"

// seen is what the payloads say, one "cluster rule type name" string each.
func seen(ps []event.Payload) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s %s %s %s", p.Cluster, p.Rule, p.Type, p.Name))
	}
	slices.Sort(out)
	return out
}

// namespaceIn creates the namespace ns in a second cluster too.
func namespaceIn(t *testing.T, e *testenv.Env, ns string) dynamic.Interface {
	t.Helper()
	d := dynamic.NewForConfigOrDie(e.Config)
	obj := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}
	if _, err := d.Resource(nsGVR).Create(context.Background(), unstructuredOf(obj), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return d
}

func createIn(t *testing.T, d dynamic.Interface, ns, name, v string) {
	t.Helper()
	if _, err := d.Resource(cmGVR).Namespace(ns).Create(context.Background(), unstructuredOf(configMap(ns, name, map[string]any{"v": v})), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestClustersDeliverWithTheirNames(t *testing.T) {
	we := west(t)
	ns := namespace(t)
	wd := namespaceIn(t, we, ns)
	cr := runClusters(t, clustersConfig(ns, "", bothClusters), "", we)
	cr.synced(t, "east")
	cr.synced(t, "west")
	create(t, cmGVR, ns, configMap(ns, "in-east", map[string]any{"v": "1"}))
	createIn(t, wd, ns, "in-west", "1")
	got := cr.out.wait(t, 3, eventWait)
	want := []string{"east everywhere add in-east", "west everywhere add in-west", "west west-only add in-west"}
	if s := seen(got); !slices.Equal(s, want) {
		t.Fatalf("payloads:\n%s\nwant:\n%s", strings.Join(s, "\n"), strings.Join(want, "\n"))
	}
	for _, raw := range cr.out.rawLines() {
		if !strings.Contains(raw, `"cluster":"`) {
			t.Errorf("a payload without its cluster: %s", raw)
		}
	}
	cr.quiet(t, "out")
	if n := len(cr.out.snapshot()); n != 3 {
		t.Errorf("%d payloads, want 3: %v", n, seen(cr.out.snapshot()))
	}
}

func TestWithoutClustersNoClusterKey(t *testing.T) {
	ns := namespace(t)
	r := start(t, fmt.Sprintf("apiVersion: dynwatch/v1alpha1\nactions: [{name: out, log: {}}]\nrules:\n  - {name: cms, namespaces: [%s], resources: [{group: \"\", resource: configmaps}], actions: [out]}\n", ns))
	create(t, cmGVR, ns, configMap(ns, "a", map[string]any{"v": "1"}))
	r.out.wait(t, 1, eventWait)
	if raw := r.out.rawLines()[0]; strings.Contains(raw, `"cluster"`) {
		t.Errorf("a payload without clusters has a cluster key: %s", raw)
	}
	if got := r.w.Clusters(); got != nil {
		t.Errorf("Clusters() without clusters = %v, want nil", got)
	}
}

// A cluster down when dynwatch starts does not stop the other; once it is
// up, what changed in it since the last run (with state) is replayed.
func TestClusterDownAtStartThenUp(t *testing.T) {
	we := west(t)
	ns := namespace(t)
	wd := namespaceIn(t, we, ns)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	cfg := clustersConfig(ns, dbPath, bothClusters)
	createIn(t, wd, ns, "before", "1")
	first := runClusters(t, cfg, dbPath, we)
	first.synced(t, "east")
	first.synced(t, "west") // baselines of both clusters
	first.end()
	// While dynwatch is away, west changes; then west cannot be reached.
	createIn(t, wd, ns, "while-away", "1")
	if err := we.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = we.StartAPIServer() }) // for the next test, should this one fail
	cr := runClusters(t, cfg, dbPath, we)
	cr.synced(t, "east")
	create(t, cmGVR, ns, configMap(ns, "east-live", map[string]any{"v": "1"}))
	cr.out.waitMatch(t, "east's event while west is down", eventWait, func(p event.Payload) bool { return p.Name == "east-live" })
	testenv.WaitFor(t, "west said down", 10*time.Second, func() bool { return !cr.up("west") && cr.up("east") })
	if !strings.Contains(cr.logs.String(), "cannot reach the cluster west") {
		t.Errorf("no WARN about west: %s", cr.logs.String())
	}
	if err := we.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	cr.synced(t, "west")
	cr.out.waitMatch(t, "west's gap replayed", eventWait, func(p event.Payload) bool { return p.Name == "while-away" && p.Rule == "west-only" })
	testenv.WaitFor(t, "west said up", 10*time.Second, func() bool { return cr.up("west") })
	cr.quiet(t, "out")
	want := []string{"east everywhere add east-live", "west everywhere add while-away", "west west-only add while-away"}
	if s := seen(cr.out.snapshot()); !slices.Equal(s, want) {
		t.Fatalf("payloads:\n%s\nwant:\n%s", strings.Join(s, "\n"), strings.Join(want, "\n"))
	}
	for _, p := range cr.out.snapshot() {
		if p.Name == "while-away" && !p.Replay {
			t.Errorf("west's gap is not a replay: %+v", p)
		}
	}
}

// A cluster that cannot be reached for a while (its link cut) misses
// nothing and repeats nothing: its changes in the gap are delivered once it
// is back, and the other cluster goes on meanwhile.
func TestClusterTakenDownAndBack(t *testing.T) {
	we := west(t)
	ns := namespace(t)
	wd := namespaceIn(t, we, ns)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	createIn(t, wd, ns, "changes", "1")
	createIn(t, wd, ns, "goes", "1")
	cr := runClusters(t, clustersConfig(ns, dbPath, "  - name: east\n  - name: west\n"), dbPath, we)
	cr.synced(t, "east")
	cr.synced(t, "west")
	cr.links["west"].setCut(true)
	testenv.WaitFor(t, "west said down", 10*time.Second, func() bool { return !cr.up("west") })
	ctx := context.Background()
	cm, err := wd.Resource(cmGVR).Namespace(ns).Get(ctx, "changes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Object["data"] = map[string]any{"v": "2"}
	if _, err := wd.Resource(cmGVR).Namespace(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wd.Resource(cmGVR).Namespace(ns).Delete(ctx, "goes", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	createIn(t, wd, ns, "comes", "1")
	create(t, cmGVR, ns, configMap(ns, "east-meanwhile", map[string]any{"v": "1"}))
	cr.out.waitMatch(t, "east goes on", eventWait, func(p event.Payload) bool { return p.Name == "east-meanwhile" })
	cr.links["west"].setCut(false)
	testenv.WaitFor(t, "west said up", 20*time.Second, func() bool { return cr.up("west") })
	cr.out.waitMatch(t, "west's gap", 30*time.Second, func(p event.Payload) bool { return p.Name == "comes" && p.Rule == "west-only" })
	createIn(t, wd, ns, "sentinel", "1")
	cr.out.waitMatch(t, "west's sentinel", eventWait, func(p event.Payload) bool { return p.Name == "sentinel" && p.Rule == "west-only" })
	cr.quiet(t, "out")
	want := []string{
		"east everywhere add east-meanwhile",
		"west everywhere add comes", "west everywhere add sentinel", "west everywhere delete goes", "west everywhere update changes",
		"west west-only add comes", "west west-only add sentinel", "west west-only delete goes", "west west-only update changes",
	}
	if s := seen(cr.out.snapshot()); !slices.Equal(s, want) {
		t.Fatalf("payloads:\n%s\nwant (each once):\n%s", strings.Join(s, "\n"), strings.Join(want, "\n"))
	}
}

// A reload that adds a cluster, then removes it, leaves the other
// cluster's informers alone: they neither start again nor list again.
func TestReloadAddsAndRemovesACluster(t *testing.T) {
	we := west(t)
	ns := namespace(t)
	wd := namespaceIn(t, we, ns)
	cr := runClusters(t, clustersConfig(ns, "", "  - name: east\n"), "", we)
	cr.synced(t, "east")
	eastMgr := cr.w.ClusterManager("east")
	lists := cr.links["east"].lists.Load()
	if lists == 0 {
		t.Fatal("no list of east counted")
	}
	reloadClusters(t, cr, clustersConfig(ns, "", bothClusters))
	cr.synced(t, "west")
	createIn(t, wd, ns, "west-1", "1")
	create(t, cmGVR, ns, configMap(ns, "east-1", map[string]any{"v": "1"}))
	cr.out.waitMatch(t, "west's event", eventWait, func(p event.Payload) bool { return p.Name == "west-1" && p.Rule == "west-only" })
	cr.out.waitMatch(t, "east's event", eventWait, func(p event.Payload) bool { return p.Name == "east-1" })
	reloadClusters(t, cr, clustersConfig(ns, "", "  - name: east\n"))
	if cr.w.ClusterManager("west") != nil {
		t.Error("west is still watched after the reload removed it")
	}
	createIn(t, wd, ns, "west-2", "1")
	create(t, cmGVR, ns, configMap(ns, "east-2", map[string]any{"v": "1"}))
	cr.out.waitMatch(t, "east's event", eventWait, func(p event.Payload) bool { return p.Name == "east-2" })
	cr.quiet(t, "out")
	for _, p := range cr.out.snapshot() {
		if p.Name == "west-2" {
			t.Errorf("a removed cluster's event was delivered: %+v", p)
		}
	}
	if cr.w.ClusterManager("east") != eastMgr {
		t.Error("east's informer manager was replaced")
	}
	if n := cr.links["east"].lists.Load(); n != lists {
		t.Errorf("east listed %d times more across the reloads, want 0", n-lists)
	}
}

func reloadClusters(t *testing.T, cr *clusterRun, yaml string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cr.w.ReloadFile(path); err != nil {
		t.Fatal(err)
	}
}

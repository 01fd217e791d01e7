package watcher

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"k8s.io/client-go/discovery"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
	"github.com/dynwatch/dynwatch/metrics"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/state"
)

// durableRun is a watcher with restart state run by a test, with the seams
// some tests need.
type durableRun struct {
	config string
	dbPath string
	// disc, when set, is the discovery the watcher reads; default the real one.
	disc discovery.DiscoveryInterface
	// metrics, when set, counts what the watcher counts.
	metrics *metrics.Metrics
	// setup, when set, runs on the watcher before Run.
	setup func(*Watcher)
	// maxPending, when set, bounds what waits for a refused commit.
	maxPending int64
}

// runDurable runs o until the test ends; stop stops it and closes the state.
func runDurable(t *testing.T, o durableRun) (*running, func()) {
	t.Helper()
	file, err := plan.Parse(t.Name()+".yaml", []byte(o.config))
	if err != nil {
		t.Fatal(err)
	}
	if o.disc == nil {
		o.disc = discovery.NewDiscoveryClientForConfigOrDie(env.Config)
	}
	store, err := state.Open(o.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	out := newLines()
	logs := &testenv.Buffer{}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}, logs), &slog.HandlerOptions{Level: slog.LevelInfo}))
	w, err := New(file, informerClient(t, env.Config), o.disc, Options{Logger: log, Stdout: out, Store: store, Metrics: o.metrics, MaxPendingBytes: o.maxPending})
	if err != nil {
		t.Fatal(err)
	}
	if o.setup != nil {
		o.setup(w)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Error("the watcher did not stop within 30s")
			}
			_ = store.Close()
		})
	}
	t.Cleanup(stop)
	return &running{w: w, out: out, logs: logs, cancel: cancel, done: done}, stop
}

// cmsConfig is a config with its state file at dbPath whose rule cms logs
// the configmaps of ns to the action out.
func cmsConfig(dbPath, ns string) string {
	return fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions: [{name: out, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [out]}]
`, dbPath, ns)
}

// compared waits until r's informers synced and their lists were compared
// with the records.
func compared(t *testing.T, r *running) {
	t.Helper()
	waitUntil(t, "the lists compared with the records", 30*time.Second, func() bool {
		return r.w.Synced() && len(r.w.Manager().Watches()) > 0 && len(r.w.durable.listingKeys()) == 0
	})
}

// scrape returns the lines of m's exposition that start with name.
func scrape(m *metrics.Metrics, name string) []string {
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var out []string
	for l := range strings.SplitSeq(rec.Body.String(), "\n") {
		if strings.HasPrefix(l, name) {
			out = append(out, l)
		}
	}
	return out
}

// summary lists payloads as type, replay and name, for failure messages.
func summary(ps []event.Payload) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "[%s replay=%v %s/%s rv %s] ", p.Type, p.Replay, p.Namespace, p.Name, p.ResourceVersion)
	}
	return b.String()
}

// dataV is data.v of the ConfigMap of a payload.
func dataV(p event.Payload) string { return gjson.GetBytes(p.Object, "data.v").Str }

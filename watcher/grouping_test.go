package watcher

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/metrics"
	"github.com/dynwatch/dynwatch/state"
)

// groupReceiver records the grouped deliveries a webhook receives.
type groupReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []receivedGroup
}

type receivedGroup struct {
	at   time.Time
	body event.GroupPayload
}

func newGroupReceiver(t *testing.T) *groupReceiver {
	gr := &groupReceiver{}
	gr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var g event.GroupPayload
		if err := json.Unmarshal(b, &g); err != nil || g.Count != len(g.Events) {
			t.Errorf("not a grouped delivery: %s", b)
		}
		gr.mu.Lock()
		gr.got = append(gr.got, receivedGroup{at: time.Now(), body: g})
		gr.mu.Unlock()
	}))
	t.Cleanup(gr.srv.Close)
	return gr
}

func (gr *groupReceiver) groups() []receivedGroup {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	return append([]receivedGroup(nil), gr.got...)
}

// names are the objects delivered, sorted, each as often as it came.
func (gr *groupReceiver) names() []string {
	var out []string
	for _, g := range gr.groups() {
		for _, p := range g.body.Events {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}

func groupedConfig(dbPath, ns, url, group string) string {
	return fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
shutdownGrace: 5s
actions: [{name: hook, webhook: {url: %q, retry: {max: 100, initialBackoff: 50ms, maxBackoff: 200ms}}, group: %s}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [hook]}]
`, dbPath, url, group, ns)
}

// A crash (no drain, nothing marked done) while a group waits: the next
// start re-forms the group from the state file and delivers it once, its
// wait counted from its first event, not from the restart.
func TestGroupSurvivesCrash(t *testing.T) {
	ns := namespace(t)
	rc := newGroupReceiver(t)
	db := filepath.Join(t.TempDir(), "state.db")
	const wait = 8 * time.Second
	config := groupedConfig(db, ns, rc.srv.URL, "{by: [namespace], wait: 8s}")
	r1, stop1 := runDurable(t, durableRun{config: config, dbPath: db})
	compared(t, r1)
	for i := range 5 {
		create(t, cmGVR, ns, configMap(ns, fmt.Sprint("cm", i), map[string]any{"v": "0"}))
	}
	waitUntil(t, "five events in the open group", 30*time.Second, func() bool { return r1.w.Queue("hook").GroupEvents() == 5 })
	m1 := metrics.New(metrics.Sources{Queues: r1.w.QueueSamples})
	for _, want := range []string{`dynwatch_group_events{action="hook"} 5`, `dynwatch_queue_depth{action="hook"} 5`, `dynwatch_groups_total{action="hook"} 0`} {
		name, _, _ := strings.Cut(want, "{")
		if got := scrape(m1, name); len(got) != 1 || got[0] != want {
			t.Errorf("scraped %q, want %q", got, want)
		}
	}
	r1.w.Halt() // as kill -9: nothing more is delivered or marked done
	stop1()
	if n := len(rc.groups()); n != 0 {
		t.Fatalf("%d deliveries before the crash", n)
	}
	time.Sleep(3 * time.Second)
	r2, _ := runDurable(t, durableRun{config: config, dbPath: db})
	compared(t, r2)
	waitUntil(t, "the group after the restart", 30*time.Second, func() bool { return len(rc.names()) >= 5 })
	time.Sleep(500 * time.Millisecond) // a second delivery would come now
	if got := fmt.Sprint(rc.names()); got != "[cm0 cm1 cm2 cm3 cm4]" {
		t.Errorf("delivered %s; want each of the five once", got)
	}
	g := rc.groups()[0]
	first, err := time.Parse(event.TimeFormat, g.body.Events[0].Time)
	if err != nil {
		t.Fatal(err)
	}
	// Counted from the restart it would be 3s (the gap) + 8s after the first
	// event at least.
	if took := g.at.Sub(first); took < wait-time.Second || took > wait+2500*time.Millisecond {
		t.Errorf("delivered %s after its first event; want about the wait, %s", took, wait)
	}
	if g.body.Group["namespace"] != ns || g.body.Count != 5 {
		t.Errorf("group %v of %d", g.body.Group, g.body.Count)
	}
	m2 := metrics.New(metrics.Sources{Queues: r2.w.QueueSamples})
	waitUntil(t, "the group counted", 10*time.Second, func() bool {
		got := scrape(m2, "dynwatch_groups_total")
		return len(got) == 1 && got[0] == `dynwatch_groups_total{action="hook"} 1`
	})
	if got := scrape(m2, "dynwatch_group_events"); len(got) != 1 || got[0] != `dynwatch_group_events{action="hook"} 0` {
		t.Errorf("after delivery: %q", got)
	}
}

// A reload that changes group delivers the open groups under the old
// settings at once, with state; what comes next is grouped the new way.
func TestReloadChangingGroupDeliversOpenGroups(t *testing.T) {
	ns := namespace(t)
	rc := newGroupReceiver(t)
	db := filepath.Join(t.TempDir(), "state.db")
	r, _ := runDurable(t, durableRun{config: groupedConfig(db, ns, rc.srv.URL, "{by: [namespace], wait: 1m}"), dbPath: db})
	compared(t, r)
	create(t, cmGVR, ns, configMap(ns, "a", map[string]any{"v": "0"}))
	create(t, cmGVR, ns, configMap(ns, "b", map[string]any{"v": "0"}))
	waitUntil(t, "two events in the open group", 30*time.Second, func() bool { return r.w.Queue("hook").GroupEvents() == 2 })
	reload(t, r, groupedConfig(db, ns, rc.srv.URL, "{by: [name], wait: 1s}"))
	waitUntil(t, "the old group", 10*time.Second, func() bool { return len(rc.groups()) == 1 })
	if g := rc.groups()[0].body; g.Group["namespace"] != ns || g.Count != 2 {
		t.Errorf("first delivery %v of %d; want the old group by namespace, both events", g.Group, g.Count)
	}
	mutate(t, cmGVR, ns, "a", func(u *unstructured.Unstructured) { u.Object["data"] = map[string]any{"v": "w"} })
	waitUntil(t, "the new group", 30*time.Second, func() bool { return len(rc.groups()) == 2 })
	if g := rc.groups()[1].body; g.Group["name"] != "a" || g.Count != 1 {
		t.Errorf("second delivery %v of %d; want a's update grouped by name", g.Group, g.Count)
	}
}

// SIGTERM (the run's context ends) delivers the open groups within the
// shutdown grace period, long before they would have been due; with state
// nothing of them is left on disk.
func TestGroupDeliveredAtShutdown(t *testing.T) {
	ns := namespace(t)
	rc := newGroupReceiver(t)
	db := filepath.Join(t.TempDir(), "state.db")
	r, stop := runDurable(t, durableRun{config: groupedConfig(db, ns, rc.srv.URL, "{by: [namespace], wait: 10m}"), dbPath: db})
	compared(t, r)
	for i := range 3 {
		create(t, cmGVR, ns, configMap(ns, fmt.Sprint("cm", i), map[string]any{"v": "0"}))
	}
	waitUntil(t, "three events in the open group", 30*time.Second, func() bool { return r.w.Queue("hook").GroupEvents() == 3 })
	began := time.Now()
	stop()
	if got := fmt.Sprint(rc.names()); got != "[cm0 cm1 cm2]" || time.Since(began) > 5*time.Second {
		t.Errorf("delivered %s, %s after the stop began; want the group within the grace period", got, time.Since(began))
	}
	store, err := state.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if left, err := store.PendingActions(); err != nil || left["hook"] != 0 {
		t.Errorf("left on disk: %v (%v)", left, err)
	}
}

// With state, events waiting in a grouped action's open groups do not count
// against its in-memory window (queueSize, at most 1000): a burst of 10 with
// queueSize 4 arrives whole at the wait, as without state, not 4 at the wait
// and the rest an interval later.
func TestGroupWithStateNotCappedByWindow(t *testing.T) {
	ns := namespace(t)
	rc := newGroupReceiver(t)
	db := filepath.Join(t.TempDir(), "state.db")
	config := fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
shutdownGrace: 5s
actions: [{name: hook, queueSize: 4, webhook: {url: %q}, group: {by: [namespace], wait: 2s, interval: 30s, max: 100}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [hook]}]
`, db, rc.srv.URL, ns)
	r, _ := runDurable(t, durableRun{config: config, dbPath: db})
	compared(t, r)
	for i := range 10 {
		create(t, cmGVR, ns, configMap(ns, fmt.Sprint("cm", i), map[string]any{"v": "0"}))
	}
	deadline := time.Now().Add(12 * time.Second)
	for time.Now().Before(deadline) && len(rc.names()) < 10 {
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(rc.names()); n != 10 {
		t.Errorf("12s after a burst of 10 events (wait 2s): %d delivered in %d deliveries; the rest wait an interval behind the window", n, len(rc.groups()))
	}
}

// a crash while a group waits, and a restart later than the wait:
// the group is due at once, so the queue's timer forms it as soon as its
// first event is paged back in from disk, before the rest are; the rest join
// a group just delivered and wait the whole interval. The group arrives
// split, most of it an interval late. Here: 40 events, wait 2s, interval 30s,
// restart 3s after the crash; want all 40 within a few seconds of the start.
func TestGroupRestartAfterWaitNotSplit(t *testing.T) {
	ns := namespace(t)
	rc := newGroupReceiver(t)
	db := filepath.Join(t.TempDir(), "state.db")
	config := groupedConfig(db, ns, rc.srv.URL, "{by: [namespace], wait: 2s, interval: 30s}")
	r1, stop1 := runDurable(t, durableRun{config: config, dbPath: db})
	compared(t, r1)
	const n = 40
	for i := range n {
		create(t, cmGVR, ns, configMap(ns, fmt.Sprint("cm", i), map[string]any{"v": "0"}))
	}
	waitUntil(t, "the events in the open group", 30*time.Second, func() bool { return r1.w.Queue("hook").GroupEvents() == n })
	r1.w.Halt() // as kill -9
	stop1()
	time.Sleep(3 * time.Second)
	r2, _ := runDurable(t, durableRun{config: config, dbPath: db})
	compared(t, r2)
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) && len(rc.names()) < n {
		time.Sleep(100 * time.Millisecond)
	}
	if got := len(rc.names()); got != n {
		var sizes []int
		for _, g := range rc.groups() {
			sizes = append(sizes, g.body.Count)
		}
		t.Errorf("8s after the restart: %d of %d delivered, in deliveries of %v; the rest wait the interval", got, n, sizes)
	}
}

package watcher

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// The same configmap (same group/resource/namespace/name) in both clusters;
// deleted in west while dynwatch is away: after the restart, west replays
// its delete, east replays nothing (its object is still there).
func TestClustersSameObjectDeletedInOne(t *testing.T) {
	we := west(t)
	ns := namespace(t)
	wd := namespaceIn(t, we, ns)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	cfg := clustersConfig(ns, dbPath, bothClusters)
	createIn(t, wd, ns, "same", "1")
	create(t, cmGVR, ns, configMap(ns, "same", map[string]any{"v": "1"}))
	first := runClusters(t, cfg, dbPath, we)
	first.synced(t, "east")
	first.synced(t, "west")
	first.end()
	if err := wd.Resource(cmGVR).Namespace(ns).Delete(context.Background(), "same", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cr := runClusters(t, cfg, dbPath, we)
	cr.synced(t, "east")
	cr.synced(t, "west")
	cr.out.waitMatch(t, "west's delete", eventWait, func(p event.Payload) bool { return p.Name == "same" && p.Rule == "west-only" })
	cr.quiet(t, "out")
	want := []string{"west everywhere delete same", "west west-only delete same"}
	if s := seen(cr.out.snapshot()); !slices.Equal(s, want) {
		t.Fatalf("payloads:\n%s\nwant:\n%s", strings.Join(s, "\n"), strings.Join(want, "\n"))
	}
}

// A cluster removed by a reload keeps its records; the object deleted while
// it was out of the config is replayed as a delete once a reload adds it
// back, once, and east (never removed) replays nothing.
func TestClusterRemovedThenReaddedReplaysGap(t *testing.T) {
	we := west(t)
	ns := namespace(t)
	wd := namespaceIn(t, we, ns)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	createIn(t, wd, ns, "goes", "1")
	cr := runClusters(t, clustersConfig(ns, dbPath, bothClusters), dbPath, we)
	cr.synced(t, "east")
	cr.synced(t, "west")
	reloadClusters(t, cr, clustersConfig(ns, dbPath, "  - name: east\n"))
	if err := wd.Resource(cmGVR).Namespace(ns).Delete(context.Background(), "goes", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	createIn(t, wd, ns, "comes", "1")
	reloadClusters(t, cr, clustersConfig(ns, dbPath, bothClusters))
	cr.synced(t, "west")
	cr.out.waitMatch(t, "west's gap", eventWait, func(p event.Payload) bool { return p.Name == "comes" && p.Rule == "west-only" })
	cr.quiet(t, "out")
	want := []string{"west everywhere add comes", "west everywhere delete goes", "west west-only add comes", "west west-only delete goes"}
	if s := seen(cr.out.snapshot()); !slices.Equal(s, want) {
		t.Fatalf("payloads:\n%s\nwant:\n%s", strings.Join(s, "\n"), strings.Join(want, "\n"))
	}
}

// A reload whose added cluster cannot be connected to (its kubeconfig not
// readable yet) still applies the rest: west, which the reload removes,
// stops being watched; no event of a cluster the config no longer has is
// delivered.
func TestReloadWithUnconnectableClusterStillRemovesOthers(t *testing.T) {
	we := west(t)
	ns := namespace(t)
	wd := namespaceIn(t, we, ns)
	cr := runClusters(t, clustersConfig(ns, "", bothClusters), "", we)
	cr.synced(t, "east")
	cr.synced(t, "west")
	reloadClusters(t, cr, clustersConfig(ns, "", "  - name: east\n  - name: north\n"))
	createIn(t, wd, ns, "west-after", "1")
	create(t, cmGVR, ns, configMap(ns, "east-after", map[string]any{"v": "1"}))
	cr.out.waitMatch(t, "east's event", eventWait, func(p event.Payload) bool { return p.Name == "east-after" })
	cr.quiet(t, "out")
	for _, p := range cr.out.snapshot() {
		if p.Cluster == "west" {
			t.Errorf("an event of west, which the config no longer has: %s %s %s", p.Rule, p.Type, p.Name)
		}
	}
	if cr.w.ClusterManager("west") != nil {
		t.Error("west is still watched after the reload removed it")
	}
}

// A cluster whose clients cannot be built at start (its kubeconfig file not
// mounted yet, unparsable) is a cluster that cannot be reached: reported,
// retried (once it can be built, it is watched), and the others are watched
// meanwhile; it does not stop the watcher.
func TestUnconnectableClusterAtStartDoesNotStopOthers(t *testing.T) {
	we := west(t)
	ns := namespace(t)
	cr := runClusters(t, clustersConfig(ns, "", "  - name: east\n  - name: north\n"), "", we)
	cr.synced(t, "east")
	create(t, cmGVR, ns, configMap(ns, "east-1", map[string]any{"v": "1"}))
	cr.out.waitMatch(t, "east's event", eventWait, func(p event.Payload) bool { return p.Name == "east-1" })
	if cr.up("north") || !slices.ContainsFunc(cr.w.Clusters(), func(c ClusterStatus) bool {
		return c.Name == "north" && c.Err != nil && strings.Contains(c.Err.Error(), "clients cannot be built")
	}) {
		t.Errorf("north not reported as down, its clients not buildable: %+v", cr.w.Clusters())
	}
	// Its kubeconfig is readable now: north is retried and watched.
	wd := namespaceIn(t, we, ns)
	cr.setEnv("north", we)
	cr.synced(t, "north")
	createIn(t, wd, ns, "north-1", "1")
	cr.out.waitMatch(t, "north's event", eventWait, func(p event.Payload) bool { return p.Cluster == "north" && p.Name == "north-1" })
}

// West (without a watch cache, so a compacted resume is 410 Gone) is cut
// off while x, which both clusters hold, is deleted and re-created in west
// and etcd is compacted: when the link is back, west relists and delivers
// exactly the gap (a delete of the old uid, an add of the new one), east
// nothing; the next start replays nothing.
func TestClusterGoneThroughCompactionReplaysGap(t *testing.T) {
	cp, err := testenv.Start(testenv.Options{APIServerArgs: []string{"--watch-cache=false"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	ns := namespace(t)
	wd := namespaceIn(t, cp, ns)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	cfg := clustersConfig(ns, dbPath, bothClusters)
	createIn(t, wd, ns, "x", "1")
	create(t, cmGVR, ns, configMap(ns, "x", map[string]any{"v": "1"}))
	cr := runClusters(t, cfg, dbPath, cp)
	cr.synced(t, "east")
	cr.synced(t, "west")
	cr.links["west"].setCut(true)
	testenv.WaitFor(t, "west said down", 40*time.Second, func() bool { return !cr.up("west") })
	ctx := context.Background()
	if err := wd.Resource(cmGVR).Namespace(ns).Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	createIn(t, wd, ns, "x", "2")
	if err := cp.CompactEtcd(ctx); err != nil {
		t.Fatal(err)
	}
	lists := cr.links["west"].lists.Load()
	cr.links["west"].setCut(false)
	cr.out.waitMatch(t, "west's new x", 40*time.Second, func(p event.Payload) bool {
		return p.Cluster == "west" && p.Name == "x" && p.Type == event.Add && p.Rule == "west-only"
	})
	cr.quiet(t, "out")
	if cr.links["west"].lists.Load() == lists {
		t.Fatal("west did not relist: the 410 path was not exercised")
	}
	want := []string{"west everywhere add x", "west everywhere delete x", "west west-only add x", "west west-only delete x"}
	if s := seen(cr.out.snapshot()); !slices.Equal(s, want) {
		t.Fatalf("payloads:\n%s\nwant:\n%s", strings.Join(s, "\n"), strings.Join(want, "\n"))
	}
	cr.end()
	again := runClusters(t, cfg, dbPath, cp)
	again.synced(t, "east")
	again.synced(t, "west")
	again.quiet(t, "out")
	if s := seen(again.out.snapshot()); len(s) != 0 {
		t.Errorf("the restart replayed:\n%s", strings.Join(s, "\n"))
	}
}

// Without clusters, then with clusters (east: the same API server as the
// command line's), then without again: what east delivered while the config
// had clusters is not replayed by the one cluster's stale records (kept,
// never pruned, all the while clusters were set).
func TestBackToNoClustersReplaysNothingStale(t *testing.T) {
	ns := namespace(t)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	create(t, cmGVR, ns, configMap(ns, "old", map[string]any{"v": "1"}))
	r1, stop1 := runWithState(t, env, cmsConfig(dbPath, ns), dbPath, nil)
	compared(t, r1)
	stop1()
	cr := runClusters(t, clustersConfig(ns, dbPath, "  - name: east\n"), dbPath, nil)
	cr.synced(t, "east")
	if err := dynamic.NewForConfigOrDie(env.Config).Resource(cmGVR).Namespace(ns).Delete(context.Background(), "old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cr.out.waitMatch(t, "east's delete", eventWait, func(p event.Payload) bool { return p.Name == "old" && p.Type == event.Delete })
	cr.quiet(t, "out")
	cr.end()
	r3, stop3 := runWithState(t, env, cmsConfig(dbPath, ns), dbPath, nil)
	compared(t, r3)
	r3.quiet(t, "out")
	stop3()
	for _, p := range r3.out.snapshot() {
		t.Errorf("replayed after going back to no clusters: %s %s %s (replay=%v)", p.Rule, p.Type, p.Name, p.Replay)
	}
}

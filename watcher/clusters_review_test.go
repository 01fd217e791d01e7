package watcher

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynwatch/dynwatch/event"
)

// The same configmap (same group/resource/namespace/name) in both clusters;
// deleted in west while dynwatch is away: after the restart, west replays
// its delete, east replays nothing (its object is still there).
func TestReviewSameObjectInTwoClustersDeletedInOne(t *testing.T) {
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
func TestReviewClusterRemovedThenReaddedReplaysGap(t *testing.T) {
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
func TestReviewReloadWithUnconnectableClusterStillRemovesOthers(t *testing.T) {
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
// retried, and the others are watched; it does not stop the watcher.
func TestReviewUnconnectableClusterAtStartDoesNotStopOthers(t *testing.T) {
	we := west(t)
	ns := namespace(t)
	cr := runClusters(t, clustersConfig(ns, "", "  - name: east\n  - name: north\n"), "", we)
	cr.synced(t, "east")
	create(t, cmGVR, ns, configMap(ns, "east-1", map[string]any{"v": "1"}))
	cr.out.waitMatch(t, "east's event", eventWait, func(p event.Payload) bool { return p.Name == "east-1" })
	if cr.up("north") || !slices.ContainsFunc(cr.w.Clusters(), func(c ClusterStatus) bool { return c.Name == "north" }) {
		t.Errorf("north not reported as down: %+v", cr.w.Clusters())
	}
}

package watcher

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/event"
)

// A reload that brings the clusters block to a watcher started without it,
// or takes it away from one started with it, is refused: the running config
// stays (the records' keys and the metrics' cluster label are decided at
// start); within a config that has clusters, a reload may still add one.
func TestClustersBlockAddedOrRemovedByAReloadIsRefused(t *testing.T) {
	ns := namespace(t)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	r, stop := runWithState(t, env, cmsConfig(dbPath, ns), dbPath, nil)
	defer stop()
	compared(t, r)
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(clustersConfig(ns, dbPath, "  - name: east\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.w.ReloadFile(path); !errors.Is(err, ErrClustersRestart) {
		t.Fatalf("reload adding clusters: %v, want ErrClustersRestart", err)
	}
	if len(r.w.File().Config.Clusters) != 0 || r.w.File().Rule("cms") == nil {
		t.Error("the refused reload changed the running config")
	}
	if len(r.w.Clusters()) != 0 {
		t.Errorf("clusters after the refused reload: %+v", r.w.Clusters())
	}

	we := west(t)
	namespaceIn(t, we, ns)
	cr := runClusters(t, clustersConfig(ns, "", "  - name: east\n"), "", we)
	cr.synced(t, "east")
	if err := os.WriteFile(path, []byte(cmsConfig(dbPath, ns)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cr.w.ReloadFile(path); !errors.Is(err, ErrClustersRestart) {
		t.Fatalf("reload removing clusters: %v, want ErrClustersRestart", err)
	}
	reloadClusters(t, cr, clustersConfig(ns, "", bothClusters))
	cr.synced(t, "west")
}

// Going from no clusters to clusters at a restart: the one cluster's
// records become those of the cluster that uses the command line's
// kubeconfig and no context (east here), so what changed while dynwatch
// was stopped is replayed once, as after any restart.
func TestClustersAdoptTheOneClusterRecords(t *testing.T) {
	ns := namespace(t)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	create(t, cmGVR, ns, configMap(ns, "old", map[string]any{"v": "1"}))
	r1, stop1 := runWithState(t, env, cmsConfig(dbPath, ns), dbPath, nil)
	compared(t, r1)
	stop1()
	if err := dynamic.NewForConfigOrDie(env.Config).Resource(cmGVR).Namespace(ns).Delete(context.Background(), "old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cr := runClusters(t, clustersConfig(ns, dbPath, "  - name: east\n"), dbPath, nil)
	cr.synced(t, "east")
	cr.out.waitMatch(t, "east's replayed delete", eventWait, func(p event.Payload) bool { return p.Name == "old" && p.Type == event.Delete })
	cr.quiet(t, "out")
	if s := seen(cr.out.snapshot()); !slices.Equal(s, []string{"east everywhere delete old"}) {
		t.Errorf("payloads: %v, want east's replayed delete of old, once", s)
	}
	if !strings.Contains(cr.logs.String(), "are now those of the cluster that uses the command line's kubeconfig") {
		t.Error("no log of the adopted records")
	}
}

// A cluster renamed or removed while dynwatch is stopped has its records
// dropped at the next start (said at INFO with how many): named again
// later, it starts afresh and replays nothing of its stale records.
func TestClusterRemovedAtARestartIsPruned(t *testing.T) {
	we := west(t)
	ns := namespace(t)
	wd := namespaceIn(t, we, ns)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	createIn(t, wd, ns, "goes", "1")
	first := runClusters(t, clustersConfig(ns, dbPath, bothClusters), dbPath, we)
	first.synced(t, "east")
	first.synced(t, "west")
	first.end()
	only := runClusters(t, clustersConfig(ns, dbPath, "  - name: east\n"), dbPath, we)
	only.synced(t, "east")
	if l := only.logs.String(); !strings.Contains(l, "dropped the records of clusters the config does not name") || !strings.Contains(l, `records=1`) || !strings.Contains(l, `west`) {
		t.Errorf("no INFO line of west's dropped record:\n%s", l)
	}
	only.end()
	if err := wd.Resource(cmGVR).Namespace(ns).Delete(context.Background(), "goes", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again := runClusters(t, clustersConfig(ns, dbPath, bothClusters), dbPath, we)
	again.synced(t, "east")
	again.synced(t, "west")
	again.quiet(t, "out")
	if s := seen(again.out.snapshot()); len(s) != 0 {
		t.Errorf("west replayed its stale records: %v", s)
	}
}

package watcher

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
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

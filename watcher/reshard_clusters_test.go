package watcher

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/state"
)

// A shard new to the set at a reshard, with two clusters: the objects of
// its share are compared with their old shard's end in every cluster, not
// only in the one whose watches start first (each cluster's source starts
// its own). Created after that end, each fires a replayed add.
func TestNewShardWithClustersAdoptsEveryCluster(t *testing.T) {
	we := west(t)
	ns := namespace(t)
	wd := namespaceIn(t, we, ns)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	s, err := state.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	prev := state.MovedFrom{Count: 1}
	prev.SetEnd(0, time.Now().Add(-time.Hour))                         // the old set stopped an hour ago
	if err := s.SetMovedFrom(prev, true, "east", "west"); err != nil { // as the daemon of a shard new to the set keeps it
		t.Fatal(err)
	}
	s.Close()
	createIn(t, wd, ns, "gap", "1") // created while the set was stopped
	create(t, cmGVR, ns, configMap(ns, "gap", map[string]any{"v": "1"}))
	cr := runClusters(t, clustersConfig(ns, dbPath, bothClusters), dbPath, we)
	cr.synced(t, "east")
	cr.synced(t, "west")
	time.Sleep(time.Second)
	want := []string{"east everywhere add gap", "west everywhere add gap", "west west-only add gap"}
	if got := seen(cr.out.snapshot()); !slices.Equal(got, want) {
		t.Errorf("a new shard with two clusters fires:\n%s\nwant (the adds of objects created while the set was stopped):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

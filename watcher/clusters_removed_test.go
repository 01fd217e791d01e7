package watcher

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/state"
)

// A reload that removes west takes it out of the pipeline before its
// source stops: events west sends in that window route nowhere. Their
// records must not move forward either, or west, added back, is compared
// with records that say those objects were seen and replays nothing: the
// objects created in the window are then never delivered under any rule.
// The window is held open (the removing hook) until west's watch has
// brought every object made in it.
func TestClusterRemovedMidEventRecordsNothing(t *testing.T) {
	we := west(t)
	ns := namespace(t)
	wd := namespaceIn(t, we, ns)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	cr := runClusters(t, clustersConfig(ns, dbPath, bothClusters), dbPath, we)
	cr.synced(t, "east")
	cr.synced(t, "west")

	const n = 5
	seenByTest, err := wd.Resource(cmGVR).Namespace(ns).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer seenByTest.Stop()
	cr.w.removing = func() {
		for i := range n {
			createIn(t, wd, ns, fmt.Sprintf("window-%d", i), "1")
		}
		// West's own watch (on the same API server) brings them as this
		// one does; its handler then runs with west out of the pipeline.
		deadline := time.After(eventWait)
		for got := 0; got < n; {
			select {
			case e := <-seenByTest.ResultChan():
				if e.Type == watch.Added {
					got++
				}
			case <-deadline:
				t.Fatalf("the test's watch saw %d of %d adds", got, n)
			}
		}
		time.Sleep(time.Second) // their commits, had they any, are on disk by now
	}
	reloadClusters(t, cr, clustersConfig(ns, dbPath, "  - name: east\n"))
	cr.w.removing = nil
	if recs := westRecords(t, cr); recs != 0 {
		t.Errorf("%d records of west written for events routed nowhere while west left the config", recs)
	}

	reloadClusters(t, cr, clustersConfig(ns, dbPath, bothClusters))
	cr.synced(t, "west")
	for i := range n {
		name := fmt.Sprintf("window-%d", i)
		for _, rule := range []string{"everywhere", "west-only"} {
			cr.out.waitMatch(t, rule+" "+name, eventWait, func(p event.Payload) bool {
				return p.Cluster == "west" && p.Rule == rule && p.Name == name && p.Type == event.Add
			})
		}
	}
}

// westRecords counts the records west has of configmaps.
func westRecords(t *testing.T, cr *clusterRun) int {
	t.Helper()
	n := 0
	err := cr.w.durable.store.View(func(tx *state.Tx) error {
		return tx.ForEachName(recordsOf("west", "", "configmaps"), func(string, string, string) error { n++; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

package main

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// Shards and clusters together: two shard processes, each watching two
// clusters, one of whose API servers filters by shard (ShardedListAndWatch)
// and one that does not (each shard filters itself). Between them they
// deliver every event of both clusters exactly once, each with its cluster,
// each shard only its share of each cluster, caching only that share; the
// filtering server's audit log shows the selector on each shard's lists and
// watches.
func TestShardsWithClusters(t *testing.T) {
	t.Parallel()
	gated, err := testenv.Start(testenv.Options{FeatureGates: []string{"ShardedListAndWatch"}, AuditLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer gated.Stop()
	envs := map[string]*testenv.Env{"a": cp, "b": gated}
	da := dynamic.NewForConfigOrDie(cp.Config)
	db := dynamic.NewForConfigOrDie(gated.Config)
	ns := testenv.Namespace(t, da)
	if _, err := db.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(t.Context(),
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	const count = 2
	procs, bases := startClusterShards(t, dir, ns, count, gated)

	const perCluster = 300
	createCMs(t, da, ns, "cm", perCluster)
	createCMs(t, db, ns, "cm", perCluster)
	testenv.WaitFor(t, "the adds of both clusters", 60*time.Second, func() bool {
		n := 0
		for _, p := range procs {
			n += len(p.payloads())
		}
		return n >= 2*perCluster
	})
	// An update and a delete in each cluster, after the adds.
	for name, d := range map[string]dynamic.Interface{"a": da, "b": db} {
		ri := d.Resource(cmsGVR).Namespace(ns)
		u, err := ri.Get(t.Context(), "cm-1", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("cluster %s: %v", name, err)
		}
		_ = unstructured.SetNestedField(u.Object, "1", "data", "v")
		if _, err := ri.Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("cluster %s: %v", name, err)
		}
		if err := ri.Delete(t.Context(), "cm-2", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("cluster %s: %v", name, err)
		}
	}
	testenv.WaitFor(t, "the updates and deletes of both clusters", 60*time.Second, func() bool {
		n := 0
		for _, p := range procs {
			n += len(p.payloads())
		}
		return n >= 2*perCluster+4
	})
	time.Sleep(time.Second) // a duplicate would come meanwhile

	seen := map[string]int{}
	for i, p := range procs {
		shard := dyninformer.NewShard(count, i, false)
		byCluster := map[string]int{}
		for _, pl := range p.payloads() {
			if envs[pl.Cluster] == nil {
				t.Errorf("shard %d: %s %s of cluster %q, none of the config's", i, pl.Type, pl.Name, pl.Cluster)
				continue
			}
			seen[pl.Cluster+" "+pkey(pl)]++
			if !shard.Owns(pl.UID, pl.Namespace) {
				t.Errorf("shard %d delivered %s of cluster %s, another shard's", i, pl.Name, pl.Cluster)
			}
			if pl.Type == "add" {
				byCluster[pl.Cluster]++
			}
		}
		for _, c := range []string{"a", "b"} {
			cached := metricValue(t, bases[i], fmt.Sprintf(`dynwatch_informer_objects{cluster="%s",namespace="%s",resource="configmaps"}`, c, ns))
			// The add of cm-2, deleted since, is not cached any more if
			// this shard had it.
			if cached == 0 || cached >= perCluster || (cached != byCluster[c] && cached != byCluster[c]-1) {
				t.Errorf("shard %d caches %d objects of cluster %s, delivered %d adds of %d", i, cached, c, byCluster[c], perCluster)
			}
		}
	}
	if len(seen) != 2*perCluster+4 {
		t.Errorf("%d distinct events delivered, want %d", len(seen), 2*perCluster+4)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s delivered %d times", k, n)
		}
	}
	for _, p := range procs {
		p.stopOK(syscall.SIGTERM)
	}
	checkShardSelectors(t, gated, ns, count)
	reshardClustersTo3(t, dir, ns, gated, map[string]dynamic.Interface{"a": da, "b": db})
}

// startClusterShards starts count shard processes of one config watching
// two clusters, a (the test control plane, which does not filter by shard)
// and b, each with its own state file under dir, and waits until each is
// ready on both.
func startClusterShards(t *testing.T, dir, ns string, count int, b *testenv.Env) ([]*proc, []string) {
	t.Helper()
	set := startShardsWith(t, cp, dir, ns, count, fmt.Sprintf("clusters:\n  - {name: a, kubeconfig: %s}\n  - {name: b, kubeconfig: %s}\n", cp.Kubeconfig, b.Kubeconfig))
	for i, base := range set.bases {
		testenv.WaitFor(t, fmt.Sprintf("shard %d ready on both clusters", i), 60*time.Second, func() bool {
			code, body := get(t, base+"/readyz")
			return code == http.StatusOK && !strings.Contains(body, "degraded")
		})
	}
	return set.procs, set.bases
}

// reshardClustersTo3 deletes objects in both clusters while no shard runs,
// then starts three shards on the state the two left: every delete replays
// exactly once, from the shard that had the object (an object that moved to
// another shard included: its old shard lists its old share in that
// cluster and replays the delete of what is gone), and nothing else is
// delivered twice.
func reshardClustersTo3(t *testing.T, dir, ns string, b *testenv.Env, ds map[string]dynamic.Interface) {
	t.Helper()
	deleted := map[string]bool{} // cluster + uid
	for name, d := range ds {
		ri := d.Resource(cmsGVR).Namespace(ns)
		for i := 10; i < 40; i++ {
			u, err := ri.Get(t.Context(), fmt.Sprintf("cm-%d", i), metav1.GetOptions{})
			if err != nil {
				t.Fatalf("cluster %s: %v", name, err)
			}
			if err := ri.Delete(t.Context(), u.GetName(), metav1.DeleteOptions{}); err != nil {
				t.Fatalf("cluster %s: %v", name, err)
			}
			deleted[name+" "+string(u.GetUID())] = true
		}
	}
	procs, _ := startClusterShards(t, dir, ns, 3, b)
	testenv.WaitFor(t, "the replayed deletes of both clusters", 60*time.Second, func() bool {
		n := 0
		for _, p := range procs {
			for _, pl := range p.payloads() {
				if pl.Type == "delete" && pl.Replay {
					n++
				}
			}
		}
		return n >= len(deleted)
	})
	time.Sleep(time.Second) // a duplicate would come meanwhile
	for _, p := range procs {
		p.stopOK(syscall.SIGTERM)
	}
	seen := map[string]int{}
	for i, p := range procs {
		for _, pl := range p.payloads() {
			seen[pl.Cluster+" "+pkey(pl)]++
			if pl.Type != "delete" || !deleted[pl.Cluster+" "+pl.UID] {
				t.Errorf("shard %d of 3 delivered %s %s of cluster %s (replay %v): it did not change", i, pl.Type, pl.Name, pl.Cluster, pl.Replay)
			}
		}
	}
	for k := range deleted {
		c, uid, _ := strings.Cut(k, " ")
		if n := seen[fmt.Sprintf("%s delete %s true", c, uid)]; n != 1 {
			t.Errorf("cluster %s: the delete of %s replayed %d times, want once", c, uid, n)
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s delivered %d times", k, n)
		}
	}
}

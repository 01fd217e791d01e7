package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

func waitPayloads(t *testing.T, s *shardSet, what string, n int, keep func(event.Payload) bool) {
	t.Helper()
	testenv.WaitFor(t, what, 60*time.Second, func() bool {
		got := 0
		for _, ps := range s.payloads() {
			for _, p := range ps {
				if keep(p) {
					got++
				}
			}
		}
		return got >= n
	})
}

// Objects created while every shard is stopped for a 2 → 3 reshard are new to
// the cluster, not moved in: the shard that owns one and ran under the old
// spec (0 or 1, whose file says when that spec last ran) fires its add, once.
// Shard 2 is new to the set: its file is new, its start is a first start, a
// baseline (docs/scaling.md, "Resharding"), and it fires nothing for them.
func TestReshardGapCreatesFire(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := testenv.Namespace(t, d)
	dir := t.TempDir()
	two := startShards(t, cp, dir, ns, 2)
	createCMs(t, d, ns, "cm", 40)
	waitPayloads(t, two, "40 adds", 40, func(event.Payload) bool { return true })
	two.stop()
	createCMs(t, d, ns, "gap", 10)
	three := startShards(t, cp, dir, ns, 3)
	createCMs(t, d, ns, "live", 1)
	waitPayloads(t, three, "the live add", 1, func(p event.Payload) bool { return strings.HasPrefix(p.Name, "live-") })
	time.Sleep(2 * time.Second)
	three.stop()
	adds := map[string]int{}
	for i, ps := range three.payloads() {
		for _, p := range ps {
			if p.Type == event.Add && !strings.HasPrefix(p.Name, "live-") {
				adds[p.Name]++
				if !strings.HasPrefix(p.Name, "gap-") || !p.Replay || !dyninformer.NewShard(3, i, false).Owns(p.UID, "") {
					t.Errorf("shard %d fired the add of %s (replay %v): moved in, or another shard's", i, p.Name, p.Replay)
				}
			}
		}
	}
	l, err := d.Resource(cmsGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fresh := 0
	for _, o := range l.Items {
		if !strings.HasPrefix(o.GetName(), "gap-") {
			continue
		}
		want := 1
		if dyninformer.NewShard(3, 2, false).Owns(string(o.GetUID()), "") {
			want, fresh = 0, fresh+1
		}
		if n := adds[o.GetName()]; n != want {
			t.Errorf("%s, created while stopped across the reshard: %d adds, want %d", o.GetName(), n, want)
		}
	}
	t.Logf("%d of 10 gap objects are the new shard 2's (a first start: no add)", fresh)
}

// 3 → 2 → 3 as the chart runs it: a StatefulSet scaled down deletes the
// scaled-away pod's volume (persistentVolumeClaimRetentionPolicy whenScaled:
// Delete), so pod 2 comes back with a new file, a first start, and replays
// nothing that shards 0 and 1 delivered meanwhile.
func TestShardScaleDownUpWithoutItsVolume(t *testing.T) {
	deletes, _ := scaleDownUp(t, func(string) string { return "" }, func(dir string) {
		if err := os.RemoveAll(filepath.Join(dir, "dynwatch-2")); err != nil {
			t.Fatal(err)
		}
	})
	checkDeletesOnce(t, deletes)
}

// 3 → 2 → 3 with pod 2's volume kept: its file still says "2/3 by uid", the
// spec it starts under again, so no reshard is seen. With leaderElection the
// other shards' Leases say that the set shrank to 2 after pod 2's file was
// last written: pod 2 drops its stale records, says so, and replays nothing
// that shards 0 and 1 delivered meanwhile. (Without leaderElection nothing
// tells, and the deletes replay a second time: docs/scaling.md says a shard's
// file must not outlive a shard-set change; the chart deletes it.)
func TestShardScaleDownUpStaleFileForgotten(t *testing.T) {
	le := func(ns string) string {
		return fmt.Sprintf("leaderElection: {namespace: %s, name: dw, leaseDuration: 4s, renewDeadline: 3s, retryPeriod: 500ms}\n", ns)
	}
	deletes, again := scaleDownUp(t, le, func(string) {})
	checkDeletesOnce(t, deletes)
	if log := again.procs[2].stderr.String(); !strings.Contains(log, "the shard set shrank past this shard") {
		t.Errorf("pod 2 does not say its file was stale:\n%s", log)
	}
}

func checkDeletesOnce(t *testing.T, deletes map[string]int) {
	t.Helper()
	if len(deletes) != 15 {
		t.Errorf("%d objects' deletes delivered, want 15", len(deletes))
	}
	for name, n := range deletes {
		if n != 1 {
			t.Errorf("delete of %s delivered %d times across the shard set", name, n)
		}
	}
}

// scaleDownUp runs 3 shards on 30 objects, then 2 that delete 15, between,
// then 3 again (extra: config lines for the namespace); it returns how many
// times each delete was delivered, and the last shard set.
func scaleDownUp(t *testing.T, extra func(ns string) string, between func(dir string)) (map[string]int, *shardSet) {
	t.Helper()
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := testenv.Namespace(t, d)
	dir := t.TempDir()
	three := startShardsWith(t, cp, dir, ns, 3, extra(ns))
	createCMs(t, d, ns, "cm", 30)
	waitPayloads(t, three, "30 adds", 30, func(event.Payload) bool { return true })
	three.stop()

	two := startShardsWith(t, cp, dir, ns, 2, extra(ns))
	ri := d.Resource(cmsGVR).Namespace(ns)
	for i := range 15 {
		if err := ri.Delete(t.Context(), fmt.Sprintf("cm-%d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitPayloads(t, two, "15 live deletes", 15, func(p event.Payload) bool { return p.Type == event.Delete })
	two.stop()
	between(dir)

	again := startShardsWith(t, cp, dir, ns, 3, extra(ns))
	createCMs(t, d, ns, "live", 1)
	waitPayloads(t, again, "the live add", 1, func(p event.Payload) bool { return strings.HasPrefix(p.Name, "live-") })
	time.Sleep(2 * time.Second)
	again.stop()
	deletes := map[string]int{}
	for _, s := range []*shardSet{two, again} {
		for _, ps := range s.payloads() {
			for _, p := range ps {
				if p.Type == event.Delete {
					deletes[p.Name]++
				}
			}
		}
	}
	return deletes, again
}

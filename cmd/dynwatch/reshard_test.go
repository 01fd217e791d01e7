package main

import (
	"fmt"
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
// baseline (README, Scaling out), and it fires nothing for them.
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

// 3 → 2 → 3 with each pod's own volume kept (a StatefulSet keeps the PVC of
// a pod scaled away): pod 2's file still says "2/3 by uid", the spec it is
// started under again, so no reshard is seen, and its stale records replay
// what shards 0 and 1 delivered live meanwhile.
func TestShardScaleDownUpReplaysNothingDelivered(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := testenv.Namespace(t, d)
	dir := t.TempDir()
	three := startShards(t, cp, dir, ns, 3)
	createCMs(t, d, ns, "cm", 30)
	waitPayloads(t, three, "30 adds", 30, func(event.Payload) bool { return true })
	three.stop()

	two := startShards(t, cp, dir, ns, 2)
	ri := d.Resource(cmsGVR).Namespace(ns)
	for i := range 15 {
		if err := ri.Delete(t.Context(), fmt.Sprintf("cm-%d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitPayloads(t, two, "15 live deletes", 15, func(p event.Payload) bool { return p.Type == event.Delete })
	two.stop()

	again := startShards(t, cp, dir, ns, 3)
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
	for name, n := range deletes {
		if n != 1 {
			t.Errorf("delete of %s delivered %d times across the shard set", name, n)
		}
	}
}

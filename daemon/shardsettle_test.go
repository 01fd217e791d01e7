package daemon

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/state"
)

// renew is the holder of d's Lease lock (takeOver's) renewing it once.
func renew(t *testing.T, d *daemon, id string) {
	t.Helper()
	if _, _, err := d.join.Get(t.Context()); err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Now())
	if err := d.join.Update(t.Context(), resourcelock.LeaderElectionRecord{HolderIdentity: id, LeaseDurationSeconds: 15, AcquireTime: now, RenewTime: now}); err != nil {
		t.Fatal(err)
	}
}

// movedSetUp is a 2 → 3 reshard with leaderElection, the old set stopped an
// hour ago: object x was old shard 1's and is new shard 2's; the file old
// shard 1 left records it. It returns x, the namespace, that file and the
// new shard 1, which has taken its Lease over (its shardState not run yet).
func movedSetUp(t *testing.T) (kubernetes.Interface, *corev1.ConfigMap, string, *state.Store, *daemon) {
	t.Helper()
	return movedSetUpAfter(t, nil)
}

// newShardListed is the new shard 2 taking its Lease over, bringing a new
// file to its spec, listing and saying so on its Lease (two renewals: the
// second gives the resourceVersion of the first).
func newShardListed(t *testing.T, kube kubernetes.Interface, ns string) *state.Store {
	t.Helper()
	s := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	t.Cleanup(func() { s.Close() })
	two := joinedShard2(t, kube, ns, s)
	two.listed()
	renew(t, two, "new-2")
	renew(t, two, "new-2")
	return s
}

// holds reports whether s has a record of uid.
func holds(s *state.Store, uid string) bool {
	var held bool
	_ = s.View(func(tx *state.Tx) error {
		r, _ := tx.Get(state.Resource{Resource: "configmaps"}, uid)
		held = r != nil
		return nil
	})
	return held
}

// Shard 1 of the new spec starts first and sets x aside (it moved to shard
// 2); x is deleted before shard 2 has listed (a pod that starts later). Shard
// 2 never sees x: shard 1 waits for it to say it listed, finds x gone as it
// was then, and keeps x's record, so that its delete replays from shard 1.
func TestMovedAwayDeletedBeforeNewOwnerListed(t *testing.T) {
	t.Parallel()
	kube, x, ns, old, one := movedSetUp(t)
	settled := make(chan error, 1)
	go func() { settled <- one.shardState(t.Context(), old) }()
	time.Sleep(1500 * time.Millisecond) // shard 1 is waiting for shard 2
	select {
	case err := <-settled:
		t.Fatalf("shard 1 settled before shard 2 listed (%v)", err)
	default:
	}
	if err := kube.CoreV1().ConfigMaps(ns).Delete(t.Context(), x.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	two := newShardListed(t, kube, ns)
	select {
	case err := <-settled:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("shard 1 still waits after shard 2 said it listed")
	}
	if holds(two, string(x.UID)) {
		t.Fatal("shard 2 never listed x")
	}
	if !holds(old, string(x.UID)) {
		t.Error("no shard's file holds a record of the object deleted between its old shard's start and its new shard's list: its delete is never delivered")
	}
}

// x is deleted after its new shard listed (it had x then, and delivers the
// delete live): the old shard, which settles only then, finds x as it was
// when shard 2 listed and drops its record: the delete is not delivered
// twice.
func TestMovedAwayDeletedAfterNewOwnerListedNotTwice(t *testing.T) {
	t.Parallel()
	kube, x, ns, old, one := movedSetUp(t)
	newShardListed(t, kube, ns)
	if err := kube.CoreV1().ConfigMaps(ns).Delete(t.Context(), x.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := one.shardState(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	if holds(old, string(x.UID)) {
		t.Error("the old shard replays the delete of an object its new shard had listed (and delivers the delete of): twice")
	}
}

// A new shard that never says it listed holds the old one up for
// settleWait only, which then settles with lists made now, saying so.
func TestMovedAwaySettlesWhenNewOwnerNeverLists(t *testing.T) {
	t.Parallel()
	kube, x, ns, old, one := movedSetUp(t)
	one.settleWait = 2 * time.Second
	if err := kube.CoreV1().ConfigMaps(ns).Delete(t.Context(), x.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := one.shardState(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("settled after %s without shard 2 listing, want a wait of settleWait", took)
	}
	if !holds(old, string(x.UID)) {
		t.Error("an object deleted while the set was stopped does not replay its delete")
	}
}

// Every object that moves at a change of count moves toward the shards a
// shard waits for (higher when the set grows, lower when it shrinks), so
// that no two shards wait for each other and none is left unwaited for.
func TestWaitsForEveryMoveOfACountChange(t *testing.T) {
	t.Parallel()
	for _, c := range [][2]int{{1, 2}, {2, 3}, {3, 2}, {4, 2}, {2, 5}, {5, 3}, {3, 1}} {
		prev, count := c[0], c[1]
		for i := range 2000 {
			uid := fmt.Sprintf("uid-%d", i)
			from, to := -1, -1
			for k := range max(prev, count) {
				if k < prev && dyninformer.NewShard(prev, k, false).Owns(uid, "") {
					from = k
				}
				if k < count && dyninformer.NewShard(count, k, false).Owns(uid, "") {
					to = k
				}
			}
			if from != to && from < count && !waitsFor(prev, count, from, to) {
				t.Fatalf("%d → %d: %s moves from shard %d to %d, which it does not wait for", prev, count, uid, from, to)
			}
			if from != to && from < count && waitsFor(prev, count, to, from) {
				t.Fatalf("%d → %d: shards %d and %d would wait for each other", prev, count, from, to)
			}
		}
	}
}

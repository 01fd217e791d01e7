package daemon

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	"github.com/dynwatch/dynwatch/dyninformer"
)

// As TestSettleIgnoresAStaleListedLeaseOfAnEarlierSet (3 shards, shrunk to
// 2, grown back to 3: dw-2 still says count 3, listed 1, listed-rv of the
// first era), but shard 1's own Lease is not there when the new shard 1
// starts: an operator deleted it to force a failover (or elect's Get of it
// failed: shardLeaseLabels takes any error for "no Lease"). d.ownLease is
// nil, listedAfter is "" ("any"), and the stale era-1 Lease of shard 2,
// not running, counts as the new shard 2's listing: shard 1 lists its old
// share at that stale resourceVersion, from before x existed, and keeps x's
// record as deleted: a delete that never happened is replayed, and the
// settle does not wait for the new shard 2 at all.
func TestSettleIgnoresAStaleListedLeaseWhenItsOwnLeaseIsGone(t *testing.T) {
	t.Parallel()
	kube, x, ns, old, _ := movedSetUpAfter(t, func(kube kubernetes.Interface, ns string) {
		era1 := shardDaemon(t, kube, ns, 3, 2)
		takeOver(t, era1, "era1-2")
		era1.joined()
		renew(t, era1, "era1-2")
		era1.listed()
		renew(t, era1, "era1-2")
		renew(t, era1, "era1-2")
		if err := releaseLease(era1.join, "era1-2", 5*time.Second); err != nil {
			t.Fatal(err)
		}
	})
	// Shard 1's Lease is deleted; the next process of shard 1 takes it anew.
	if err := kube.CoordinationV1().Leases(ns).Delete(t.Context(), "dw-1", metav1.DeleteOptions{}); err != nil && !errors.IsNotFound(err) {
		t.Fatal(err)
	}
	one := shardDaemon(t, kube, ns, 3, 1)
	informers, err := dyninformer.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	one.o.Informers, one.o.Discovery = informers, discovery.NewDiscoveryClientForConfigOrDie(env.Config)
	takeOver(t, one, "new-1b")
	one.settleWait = 3 * time.Second
	start := time.Now()
	if err := one.shardState(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if _, err := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), x.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("x should still exist: %v", err)
	}
	if took < 3*time.Second {
		t.Errorf("shard 1 settled after %s although the new shard 2 never started: with its own Lease gone (ownLease nil, listedAfter \"\") it took the Lease left by the 3-shard set before the shrink as shard 2's listing", took)
	}
	if holds(old, string(x.UID)) {
		t.Errorf("x exists and was never deleted, yet shard 1 kept its record as deleted: its delete replays (a delete that never happened)")
	}
}

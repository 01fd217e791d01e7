package daemon

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// As TestSettleIgnoresAStaleListedLeaseOfAnEarlierSet (3 shards, shrunk to
// 2, grown back to 3), but the era-1 holder of shard 2 was killed (node
// lost, OOM, SIGKILL), not stopped: it never released dw-2, whose holder is
// still "era1-2", renewed two hours ago, listed 1, listed-rv of era 1.
// observed.running judges a Lease running when its resourceVersion differs
// from the last one seen; on the first poll nothing was seen (rv ""), so
// every held Lease, however dead, is "running" then, and listingOf skips
// the after check for a running Lease: the dead era-1 Lease counts as the
// new shard 2's listing at once. Shard 1 lists its old share at that stale
// resourceVersion, from before x existed, and keeps x's record as deleted:
// a delete that never happened replays, and the settle does not wait for
// the new shard 2 at all. (Before a0afe73 the renewTime two hours old made
// it not running, and the after check left it out.)
func TestSettleIgnoresADeadUnreleasedLeaseOfAnEarlierSet(t *testing.T) {
	t.Parallel()
	kube, x, ns, old, one := movedSetUpAfter(t, func(kube kubernetes.Interface, ns string) {
		era1Listed(t, kube, ns)
		killedLongAgo(t, kube, ns, "dw-2") // killed: no release, its last renewal long ago
	})
	settleWithoutShard2(t, one, old, x, "the first poll of dw-2 (held by the era-1 holder, killed two hours ago) judged it running, and a running Lease skips the after check")
	if _, err := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), x.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("x should still exist: %v", err)
	}
}

// The same dead era-1 Lease of shard 2, with x older than era 1's lists (it
// existed then, was shard 2's in era 1, old shard 1's in the 2-shard era,
// and moves back to shard 2 now). x is deleted before the new shard 2
// starts (its file, stale since the set shrank past it, is forgotten, or is
// new: it holds no x). Shard 1 takes the dead Lease for shard 2's listing
// on its first poll, lists at era 1's resourceVersion, finds x and drops
// its record; the new shard 2 never sees x: its delete is in no file, lost.
func TestSettleDeadUnreleasedLeaseLosesADelete(t *testing.T) {
	t.Parallel()
	_, _, uid, old, one := deadEra1Lease2(t)
	one.settleWait = 3 * time.Second
	if err := one.shardState(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	if !holds(old, uid) {
		t.Errorf("x was deleted before the new shard 2 started, yet shard 1 dropped its record: it took shard 2's dead era-1 Lease (first poll: \"running\") for its listing and listed at era 1's resourceVersion, where x existed; x's delete is in no file")
	}
}

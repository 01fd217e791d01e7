package daemon

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dynwatch/dynwatch/state"
)

// deadEra1Lease2 is TestSettleDeadUnreleasedLeaseLosesADelete's set-up: a
// 3-shard era 1 whose shard 2 listed and was killed (dw-2 still held by
// "era1-2", renewed two hours ago, listed 1 with era 1's listed-rv), the
// 2-shard era after it (dw-0, dw-1 renewed since), x moving from old shard
// 1 to new shard 2 and deleted before the new shard 2 starts.
func deadEra1Lease2(t *testing.T) (kubernetes.Interface, string, string, *state.Store, *daemon) {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ns := oldSetStopped(t, kube, 2, time.Now().Add(-time.Hour).Truncate(time.Second))
	x := movedObject(t, kube, ns)
	era1Listed(t, kube, ns)
	killedLongAgo(t, kube, ns, "dw-2")
	oldSetRanSince(t, kube, ns)
	old, one := movedFileAndShard1(t, kube, ns, x)
	if err := kube.CoreV1().ConfigMaps(ns).Delete(t.Context(), x.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	return kube, ns, string(x.UID), old, one
}

// observed.running takes any change of a Lease's resourceVersion for its
// holder renewing it. A write that is not the holder's (an operator's
// `kubectl annotate lease`, a backup tool, a policy controller adding a
// label) changes it as well, while the holder, killed two hours ago, stays
// named on it with its renewTime of then. The dead era-1 Lease of shard 2
// is then "running" for a leaseDuration, and a running Lease skips the
// after check: shard 1 takes era 1's listing for the new shard 2's, lists
// at era 1's resourceVersion (x existed) and drops x's record. The new
// shard 2 never had x: its delete is lost. The renewTime, unchanged two
// hours old, says the holder did not renew; the check does not look.
func TestSettleDeadLeaseTouchedByAnotherWriterLosesADelete(t *testing.T) {
	t.Parallel()
	kube, ns, uid, old, one := deadEra1Lease2(t)
	one.settleWait = 4 * time.Second
	// Someone annotates dw-2 during the wait (after shard 1 first saw it).
	touched := make(chan error, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		l, err := kube.CoordinationV1().Leases(ns).Get(t.Context(), "dw-2", metav1.GetOptions{})
		if err == nil {
			if l.Annotations == nil {
				l.Annotations = map[string]string{}
			}
			l.Annotations["example.com/audited"] = "true"
			_, err = kube.CoordinationV1().Leases(ns).Update(t.Context(), l, metav1.UpdateOptions{})
		}
		touched <- err
	}()
	if err := one.shardState(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	if err := <-touched; err != nil {
		t.Fatal(err)
	}
	if !holds(old, uid) {
		t.Errorf("x was deleted before the new shard 2 started, yet shard 1 dropped its record: an annotation written on dw-2 (its era-1 holder killed two hours ago, renewTime unchanged) made it \"running\", so era 1's listing counted and x was listed at era 1's resourceVersion; x's delete is in no file")
	}
}

// The root of it, without an API server: a Lease whose only change is its
// metadata (renewTime, holder, everything in spec as it was two hours ago)
// is judged running.
func TestRunningCountsAMetadataOnlyChange(t *testing.T) {
	holder, d := "era1-2", int32(15)
	then := metav1.NewMicroTime(time.Now().Add(-2 * time.Hour))
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: "100"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &d, RenewTime: &then, AcquireTime: &then},
	}
	now := time.Now()
	var o observed
	o = o.next(l, now)
	touched := l.DeepCopy()
	touched.ResourceVersion = "101"
	touched.Annotations = map[string]string{"example.com/audited": "true"}
	if o.running(touched, now.Add(time.Second)) {
		t.Errorf("a Lease whose holder's renewTime is two hours old and unchanged is judged running because its metadata changed (resourceVersion 100 → 101)")
	}
}

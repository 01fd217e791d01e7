package daemon

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// skewedWrite is the holder of d's Lease lock writing it as a holder whose
// clock is skew behind this one does: its renewTime (its own clock) is
// that much in the past here. client-go's elector never compares a Lease's
// renewTime with the local clock (it times what it observed, observedTime),
// so such a set elects and renews fine.
func skewedWrite(t *testing.T, d *daemon, id string, skew time.Duration, takeover bool) {
	t.Helper()
	var lock resourcelock.Interface = d.join
	if takeover {
		lock = d.leaseLock(t.Context(), id)
	}
	if _, _, err := lock.Get(t.Context()); err != nil {
		t.Fatal(err)
	}
	then := metav1.NewTime(time.Now().Add(-skew))
	if err := lock.Update(t.Context(), resourcelock.LeaderElectionRecord{HolderIdentity: id, LeaseDurationSeconds: 15, AcquireTime: then, RenewTime: then}); err != nil {
		t.Fatal(err)
	}
}

// TestSettleWaitsWhileTheShardItWaitsForRuns with shard 1's node clock 20s
// behind shard 0's (leaseDuration 15s): shard 1 holds and renews its Lease
// the whole time, but shard 0 judges "running" by renewTime against its own
// clock, finds it 20s old, does not extend the wait, times out with shard 1
// (both wait settleWait), and settles x0 with a list made now, before shard
// 1 lists: x0, deleted then, is in no file and its delete is lost.
func TestSettleWaitsWhileTheShardItWaitsForRunsWithClockSkew(t *testing.T) {
	t.Parallel()
	const skew = 20 * time.Second
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ns := oldSetStopped(t, kube, 2, time.Now().Add(-time.Hour).Truncate(time.Second))
	x0, _, file0, file1, zero, one := chainSet(t, kube, ns)
	takeOver(t, zero, "new-0")
	skewedWrite(t, one, "new-1", skew, true)
	// Shard 1 renews every second while it waits, as its elector does.
	stopRenew := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		for {
			select {
			case <-stopRenew:
				return
			case <-time.After(time.Second):
				skewedWrite(t, one, "new-1", skew, false)
			}
		}
	}()
	settled0 := make(chan error, 1)
	go func() { settled0 <- zero.shardState(t.Context(), file0) }()
	if err := one.shardState(t.Context(), file1); err != nil {
		t.Fatal(err)
	}
	close(stopRenew)
	<-renewed
	one.joined()
	skewedWrite(t, one, "new-1", skew, false)
	var s0Settled bool
	select {
	case err := <-settled0:
		if err != nil {
			t.Fatal(err)
		}
		s0Settled = true
	case <-time.After(2 * time.Second):
	}
	if err := kube.CoreV1().ConfigMaps(ns).Delete(t.Context(), x0.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	one.listed()
	skewedWrite(t, one, "new-1", skew, false)
	skewedWrite(t, one, "new-1", skew, false)
	if !s0Settled {
		if err := <-settled0; err != nil {
			t.Fatal(err)
		}
	}
	if !holds(file0, string(x0.UID)) {
		t.Errorf("shard 0 settled x0 (before shard 1 listed: %v) although shard 1 held and renewed its Lease throughout (its clock %s behind): x0, deleted before shard 1 listed, is in no file and its delete is lost", s0Settled, skew)
	}
}

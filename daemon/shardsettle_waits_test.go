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

	"github.com/dynwatch/dynwatch/state"
)

// oldFileWith is the file old shard index of 2 left, holding a record of cm.
func oldFileWith(t *testing.T, index int, ns string, cm *corev1.ConfigMap) *state.Store {
	t.Helper()
	s := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	t.Cleanup(func() { s.Close() })
	if _, err := s.Reshard(fmt.Sprintf("%d/2 by uid", index), func(string, string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	recordListed(t, s, ns, cm)
	return s
}

// A 2 → 3 reshard, all with leaderElection: x0 moves from old shard 0 to new
// shard 1, x1 from old shard 1 to new shard 2. Shards 0 and 1 start
// together; shard 2's pod is late. Shard 1 waits for shard 2 (settleWait),
// and only then lists and says so; shard 0 waits for shard 1 with the same
// deadline, so it times out just as shard 1 stops waiting, and settles x0
// with a list made "now", before shard 1 has listed although shard 1 was up
// the whole time. x0, deleted after that but before shard 1 lists, is in no
// file: its delete is lost. One late shard removes the protection from every
// shard below it.
func TestSettleWaitsWhileTheShardItWaitsForRuns(t *testing.T) {
	t.Parallel()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ns := oldSetStopped(t, kube, 2, time.Now().Add(-time.Hour).Truncate(time.Second))
	x0, _, file0, file1, zero, one := chainSet(t, kube, ns)
	takeOver(t, zero, "new-0")
	takeOver(t, one, "new-1")
	settled0 := make(chan error, 1)
	go func() { settled0 <- zero.shardState(t.Context(), file0) }()
	// Shard 1: waits for shard 2 (never comes), renewing its Lease every
	// second as its elector does, then lists and says so.
	stopRenew, renewed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(renewed)
		for {
			select {
			case <-stopRenew:
				return
			case <-time.After(time.Second):
				now := metav1.NewTime(time.Now())
				if _, _, err := one.join.Get(t.Context()); err == nil {
					_ = one.join.Update(t.Context(), resourcelock.LeaderElectionRecord{HolderIdentity: "new-1", LeaseDurationSeconds: 15, AcquireTime: now, RenewTime: now})
				}
			}
		}
	}()
	err := one.shardState(t.Context(), file1)
	close(stopRenew)
	<-renewed
	if err != nil {
		t.Fatal(err)
	}
	one.joined()
	renew(t, one, "new-1")
	var s0Settled bool
	select {
	case err := <-settled0:
		if err != nil {
			t.Fatal(err)
		}
		s0Settled = true
	case <-time.After(2 * time.Second):
	}
	// x0 is deleted now: shard 1 has not listed yet, so it never sees x0.
	if err := kube.CoreV1().ConfigMaps(ns).Delete(t.Context(), x0.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	one.listed()
	renew(t, one, "new-1")
	renew(t, one, "new-1")
	if !s0Settled {
		if err := <-settled0; err != nil {
			t.Fatal(err)
		}
	}
	if !holds(file0, string(x0.UID)) {
		t.Errorf("shard 0 settled x0 (settled before shard 1 listed: %v) although shard 1 was running: x0, deleted before shard 1 listed, is in no file and its delete is lost", s0Settled)
	}
}

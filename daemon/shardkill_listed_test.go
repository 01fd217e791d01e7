package daemon

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	"github.com/dynwatch/dynwatch/dyninformer"
)

// The new shard 2 listed (and stopped renewing) before the new shard 1
// took its Lease over. Shard 1 reshards its file (Reshard commits) and is
// killed before awaitListed kept listedAfter (SetListedAfter). At its next
// start its own Lease is the killed process's takeover write under the new
// spec, later than shard 2's listing: that listing no longer counts, it
// waits settleWait and lists now. x, deleted after shard 2 listed (shard 2
// had it and delivers its delete), is then put back and replays from shard
// 1 too, after a wait that without the kill does not happen.
func TestReshardKilledBeforeListedAfterKeptIgnoresTheNewOwnersListing(t *testing.T) {
	t.Parallel()
	for _, killed := range []bool{false, true} {
		kube := kubernetes.NewForConfigOrDie(env.Config)
		ns := oldSetStopped(t, kube, 2, time.Now().Add(-time.Hour))
		x := movedObject(t, kube, ns)
		newShardListed(t, kube, ns) // and stops: its Lease is not renewed again
		old, one := movedFileAndShard1(t, kube, ns, x)
		if killed {
			if _, err := one.reshardState(old); err != nil {
				t.Fatal(err)
			}
			if _, ok := old.ListedAfter(); ok {
				t.Fatal("listedAfter kept already")
			}
			// kill -9: the next process of shard 1 takes the Lease over.
			one = shardDaemon(t, kube, ns, 3, 1)
			one.o.Informers, one.o.Discovery = movedInformers(t)
			takeOver(t, one, "new-1-again")
		}
		if err := kube.CoreV1().ConfigMaps(ns).Delete(t.Context(), x.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		one.settleWait = 3 * time.Second
		start := time.Now()
		if err := one.shardState(t.Context(), old); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if took >= one.settleWait {
			t.Errorf("killed=%v: shard 1 waited %s for shard 2, which had said it listed", killed, took.Round(time.Millisecond))
		}
		if holds(old, string(x.UID)) {
			t.Errorf("killed=%v: the old shard replays the delete of an object its new shard had listed (and delivers the delete of): twice", killed)
		}
	}
}

// movedInformers are the clients settleMovedAway lists with.
func movedInformers(t *testing.T) (*dyninformer.Client, discovery.DiscoveryInterface) {
	t.Helper()
	informers, err := dyninformer.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return informers, discovery.NewDiscoveryClientForConfigOrDie(env.Config)
}

package daemon

import (
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dynwatch/dynwatch/state"
)

// movedSetUpAfter is movedSetUp with a hook run on the namespace before x
// is created (an earlier era of the set).
func movedSetUpAfter(t *testing.T, before func(kube kubernetes.Interface, ns string)) (kubernetes.Interface, *corev1.ConfigMap, string, *state.Store, *daemon) {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ns := oldSetStopped(t, kube, 2, time.Now().Add(-time.Hour).Truncate(time.Second))
	if before != nil {
		before(kube, ns)
		oldSetRanSince(t, kube, ns) // the old set (count 2) ran after that era
	}
	x := movedObject(t, kube, ns)
	old, one := movedFileAndShard1(t, kube, ns, x)
	return kube, x, ns, old, one
}

// The set ran with 3 shards, shrank to 2 (Lease dw-2 stays as its last
// holder released it: count 3, listed 1, listed-rv of then), and now grows
// back to 3. Shard 1 sets x aside (it moves to shard 2) and must wait for
// the new shard 2 to list. But dw-2 already "shows the current spec with
// listed=1 and a listed-rv": the era-1 Lease. Shard 1 does not wait, lists
// its old share at that stale resourceVersion, from before x existed, finds
// x "gone" and keeps its record: x, which exists and was never deleted, is
// replayed as a delete.
func TestSettleIgnoresAStaleListedLeaseOfAnEarlierSet(t *testing.T) {
	t.Parallel()
	kube, x, ns, old, one := movedSetUpAfter(t, func(kube kubernetes.Interface, ns string) {
		era1 := era1Listed(t, kube, ns)
		if err := releaseLease(era1.join, "era1-2", 5*time.Second); err != nil {
			t.Fatal(err)
		}
	})
	settleWithoutShard2(t, one, old, x, "it took the Lease left by the 3-shard set before the shrink as shard 2's listing")
	if _, err := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), x.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("x should still exist: %v", err)
	}
}

// The new shard 2 lists (x is in its list, so in its file, and its watch
// from there delivers x's delete live); x is deleted after that list, before
// the Lease write that first says listed=1 (that write is the next renewal
// after the watcher's Synced callback, which itself comes only after every
// informer listed). Shard 1 lists as things were at shard 2's list of the
// scope (annListed), not at that later write: it finds x and drops its
// record, and x's delete is delivered once, by shard 2.
func TestMovedAwayDeletedWhileNewOwnerListsNotTwice(t *testing.T) {
	t.Parallel()
	kube, x, ns, old, one := movedSetUpAfter(t, nil)
	s2 := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	t.Cleanup(func() { s2.Close() })
	two := joinedShard2(t, kube, ns, s2)
	// Shard 2's watcher lists its share: x is in the list; the listing
	// records it (a moved-in object's baseline).
	l, err := kube.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var listed bool
	for _, cm := range l.Items {
		listed = listed || cm.UID == x.UID
	}
	if !listed {
		t.Fatal("x not in the list")
	}
	res := state.Resource{Resource: "configmaps"}
	recordListed(t, s2, ns, x)
	// x is deleted after shard 2's list (at l.ResourceVersion): shard 2's
	// watch, which starts there, delivers it.
	if err := kube.CoreV1().ConfigMaps(ns).Delete(t.Context(), x.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	two.noteListedScopes(map[string]string{res.In(ns).String(): l.ResourceVersion}) // Synced: the watch's first list
	two.listed()
	renew(t, two, "new-2")
	renew(t, two, "new-2")
	if err := one.shardState(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	if holds(s2, string(x.UID)) && holds(old, string(x.UID)) {
		t.Errorf("x was in shard 2's list (rv %s) and deleted after it: shard 2 delivers the delete from its watch, and shard 1 kept x's record too (it listed at the later listed-rv): the delete is delivered twice", l.ResourceVersion)
	}
}

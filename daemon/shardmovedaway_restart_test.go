package daemon

import (
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynwatch/dynwatch/state"
)

// The new shard 2 lists its share (x in it, at L1), records x in its file,
// says so on its Lease, and then its process restarts (a crash, an OOM, a
// rolling update of the new set) before the old shard 1 settles. x is
// deleted while shard 2 is down. Shard 2's next process, with the same
// file, takes the Lease over (listed reset), lists at L2 (x not in it) and
// says so: from its file, which holds x, it delivers x's delete. Shard 1,
// settling now, waits for that running holder and lists its old share at
// L2, the new process's first list, not at L1, the first list the file
// holds x from: it finds x gone and keeps its record, so x's delete is
// delivered twice (shard 2's file, shard 1's replay). Had shard 1 settled a
// minute earlier it would have listed at L1 and delivered nothing.
func TestMovedAwayDeletedWhileNewOwnerRestartsNotTwice(t *testing.T) {
	t.Parallel()
	kube, x, ns, old, one := movedSetUp(t)
	res := state.Resource{Resource: "configmaps"}
	path := filepath.Join(t.TempDir(), "s.db")
	s2 := openStore(t, path)
	two := joinedShard2(t, kube, ns, s2)
	l1, err := kube.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recordListed(t, s2, ns, x)
	two.noteListedScopes(firstLists(s2, map[string]string{res.In(ns).String(): l1.ResourceVersion}, two.log)) // as act does
	two.listed()
	renew(t, two, "new-2")
	renew(t, two, "new-2")
	// The process dies; x is deleted while it is down.
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().ConfigMaps(ns).Delete(t.Context(), x.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Its next process: the same file, a new term.
	s2 = openStore(t, path)
	t.Cleanup(func() { s2.Close() })
	again := shardDaemon(t, kube, ns, 3, 2)
	takeOver(t, again, "new-2b")
	if err := again.shardState(t.Context(), s2); err != nil {
		t.Fatal(err)
	}
	again.joined()
	renew(t, again, "new-2b")
	l2, err := kube.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range l2.Items {
		if cm.UID == x.UID {
			t.Fatal("x still listed")
		}
	}
	// Its watcher's listing finds x in the file and not in the list: it
	// delivers x's delete (the file's record is what says so here).
	if !holds(s2, string(x.UID)) {
		t.Fatal("shard 2's file lost x")
	}
	again.noteListedScopes(firstLists(s2, map[string]string{res.In(ns).String(): l2.ResourceVersion}, again.log)) // the file's first list stays L1
	again.listed()
	renew(t, again, "new-2b")
	renew(t, again, "new-2b")
	if err := one.shardState(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	if holds(old, string(x.UID)) {
		t.Errorf("x was in shard 2's file since its first list (rv %s) and deleted while shard 2 restarted: shard 2's next process delivers its delete from the file, and shard 1, which listed at the new process's first list (rv %s), kept x's record too: the delete is delivered twice", l1.ResourceVersion, l2.ResourceVersion)
	}
}

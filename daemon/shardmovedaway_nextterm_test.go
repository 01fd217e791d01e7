package daemon

import (
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynwatch/dynwatch/state"
)

// TestMovedAwayDeletedWhileNewOwnerListsNotTwice, with one more step: the
// new shard 2 lists (x in its list), x is deleted, shard 2 says it listed
// (annListed: its watch's first list, before the delete) — and then loses
// its Lease for a moment (a renewal that missed its deadline) and takes it
// again in the same process: elect's next term with the same lock. The
// lock's labels are the process's, not the term's: the takeover write says
// listed=1 with the first term's listed-rv at once, and act, starting the
// term, forgets the scopes (listedScopes nil), so the next writes say
// listed=1 without annListed. Shard 1, settling now, lists at the later
// listed-rv (after x's delete): it finds x gone and keeps its record, and
// shard 2's file, which holds x, delivers its delete too: twice — what
// annListed was to prevent, back for as long as the new term has not
// listed, and for good if the Lease then says listed-rv only.
func TestMovedAwayDeletedWhileNewOwnerListsNotTwiceInItsNextTerm(t *testing.T) {
	t.Parallel()
	kube, x, ns, old, one := movedSetUpAfter(t, nil)
	s2 := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	t.Cleanup(func() { s2.Close() })
	two := joinedShard2(t, kube, ns, s2)
	l, err := kube.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := state.Resource{Resource: "configmaps"}
	recordListed(t, s2, ns, x)
	if err := kube.CoreV1().ConfigMaps(ns).Delete(t.Context(), x.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	two.noteListedScopes(firstLists(s2, map[string]string{res.In(ns).String(): l.ResourceVersion}, two.log)) // as act does
	two.listed()
	renew(t, two, "new-2")
	renew(t, two, "new-2")
	// The term ends; the next term of the same process takes the Lease
	// with the same lock, and act starts (listedScopes reset).
	if err := releaseLease(two.join, "new-2", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	two.newTerm()          // term, before its elector runs
	renew(t, two, "new-2") // the takeover (elect's, before act)
	renew(t, two, "new-2") // a renewal before this term has listed
	got, err := kube.CoordinationV1().Leases(ns).Get(t.Context(), "dw-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dw-2 in the next term, before it lists: labels %v, annotations %v", got.Labels, got.Annotations)
	if got.Labels[labelListed] == "1" {
		t.Errorf("in the next term, before its holder lists, dw-2 says listed=1 (listed-rv %s): its holder has not listed in this term; the takeover write said so already", got.Labels[labelListedRV])
	}
	// The new term lists (x is gone) and says so; the file's first list
	// of the scope stays the first term's.
	l2, err := kube.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	two.noteListedScopes(firstLists(s2, map[string]string{res.In(ns).String(): l2.ResourceVersion}, two.log))
	two.listed()
	renew(t, two, "new-2")
	renew(t, two, "new-2")
	if err := one.shardState(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	if holds(s2, string(x.UID)) && holds(old, string(x.UID)) {
		t.Errorf("x was in shard 2's list (rv %s) and deleted after it: shard 2 delivers the delete from its file, and shard 1 kept x's record too (it listed at listed-rv %s, the annotation gone with the new term): the delete is delivered twice", l.ResourceVersion, got.Labels[labelListedRV])
	}
}

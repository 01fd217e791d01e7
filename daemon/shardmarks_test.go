package daemon

import (
	"fmt"
	"maps"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/dynwatch/dynwatch/state"
)

// A holder's marks ride its Lease's writes; the holder that takes the Lease
// over under another spec keeps them as the previous spec's, and a shard
// reading that Lease before or after the takeover learns the same marks
// with the same end. A holder without marks (not listed yet) writes none
// of its own. And the first write after a shard said it listed gives its
// resourceVersion to the next.
func TestLeaseMarksAndListed(t *testing.T) {
	t.Parallel()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ns := fmt.Sprintf("shard-marks-%d", time.Now().UnixNano()%1000000)
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lease := func() map[string]string {
		l, err := kube.CoordinationV1().Leases(ns).Get(t.Context(), "dw-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Annotations
	}
	old := shardDaemon(t, kube, ns, 2, 0)
	takeOver(t, old, "old-0")
	if _, ok := lease()[annMarks]; ok {
		t.Error("marks written before the holder listed")
	}
	marks := `{"/configmaps/":"42"}`
	old.marks.Store(&marks)
	renew(t, old, "old-0")
	if got := lease()[annMarks]; got != marks {
		t.Errorf("marks on the Lease = %q, want %q", got, marks)
	}

	prev := state.MovedFrom{Count: 2}
	reader := shardDaemon(t, kube, ns, 3, 2)
	endBefore, marksBefore, ok := reader.peerPast(t.Context(), prev, 0)
	if !ok || !maps.Equal(marksBefore, map[string]string{"/configmaps/": "42"}) {
		t.Fatalf("before the takeover: marks %v (%v)", marksBefore, ok)
	}
	next := shardDaemon(t, kube, ns, 3, 0)
	takeOver(t, next, "new-0")
	if a := lease(); a[annPrevMarks] != marks || a[annMarks] != "" {
		t.Errorf("after the takeover under another spec: annotations %v, want the old marks kept as the previous spec's and none of its own", a)
	}
	endAfter, marksAfter, ok := reader.peerPast(t.Context(), prev, 0)
	if !ok || !endAfter.Equal(endBefore) || !maps.Equal(marksAfter, marksBefore) {
		t.Errorf("after the takeover: %s %v (%v), before: %s %v", endAfter, marksAfter, ok, endBefore, marksBefore)
	}
	// The same spec again (a restart): it keeps the previous spec's marks.
	again := shardDaemon(t, kube, ns, 3, 0)
	takeOver(t, again, "new-0b")
	if a := lease(); a[annPrevMarks] != marks {
		t.Errorf("a restart under the same spec dropped the previous spec's marks: %v", a)
	}

	l, err := kube.CoordinationV1().Leases(ns).Get(t.Context(), "dw-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Labels[labelListed] != "0" || l.Labels[labelListedRV] != "" {
		t.Errorf("a new holder's Lease says listed %q at %q", l.Labels[labelListed], l.Labels[labelListedRV])
	}
	again.listed()
	renew(t, again, "new-0b")
	said, err := kube.CoordinationV1().Leases(ns).Get(t.Context(), "dw-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	renew(t, again, "new-0b")
	renew(t, again, "new-0b")
	cur := reader.specNow()
	leaseNow := func() *coordinationv1.Lease {
		l, err := kube.CoordinationV1().Leases(ns).Get(t.Context(), "dw-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	held := leaseNow()
	if l, ok := listingOf(held, cur, "", false); !ok || l.rv != said.ResourceVersion {
		t.Errorf("listingOf = %q, %v; want the resourceVersion of the write that first said so, %s", l.rv, ok, said.ResourceVersion)
	}
	if _, ok := listingOf(held, state.MovedFrom{Count: 4}, "", true); ok {
		t.Error("a shard of another spec takes the Lease's listing as of its own spec")
	}
	if _, ok := listingOf(held, cur, said.ResourceVersion, true); !ok {
		t.Error("the listing of a holder that runs not taken")
	}
	if _, ok := listingOf(held, cur, said.ResourceVersion, false); ok {
		t.Errorf("a listing at %s of a holder that does not run taken as later than itself", said.ResourceVersion)
	}
	if _, ok := listingOf(held, cur, "none", false); ok {
		t.Error("a listing of a holder that does not run taken with no Lease of its own to compare with")
	}
	if _, ok := listingOf(held, cur, "1", false); !ok {
		t.Error("a listing after the resourceVersion given not taken")
	}
	// Running is judged by the changes seen, not by the holder's clock.
	now := time.Now()
	var o observed
	if o.running(held, now) {
		t.Error("a held Lease seen once (its holder maybe killed long ago) taken as running")
	}
	if o = o.next(held, now); o.running(held, now.Add(time.Second)) {
		t.Error("a held Lease seen twice unchanged taken as running")
	}
	renew(t, again, "new-0b")
	renewed := leaseNow()
	if !o.running(renewed, now.Add(time.Second)) {
		t.Error("a held Lease seen to change not taken as running")
	}
	if o = o.next(renewed, now.Add(time.Second)); !o.running(renewed, now.Add(2*time.Second)) {
		t.Error("a held Lease seen to change a second ago not taken as running")
	}
	if o.running(renewed, now.Add(time.Hour)) {
		t.Error("a held Lease unchanged for an hour since taken as running")
	}
	if err := releaseLease(again.join, "new-0b", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if (observed{}).running(leaseNow(), now) {
		t.Error("a released Lease taken as running")
	}
}

// A process without shards publishes its marks on its one Lease, and a
// shard of a set that follows it reads them as shard 0's of count 1.
func TestPlainLeaseMarks(t *testing.T) {
	t.Parallel()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ns := fmt.Sprintf("plain-marks-%d", time.Now().UnixNano()%1000000)
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	file := loadPlan(t, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
leaderElection: {namespace: %s, name: dw}
actions: [{name: out, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], actions: [out]}]
`, ns))
	plain := &daemon{o: Options{File: file, Kube: kube}, log: shardDaemon(t, kube, ns, 1, 0).log}
	marks := `{"/configmaps/":"7"}`
	plain.marks.Store(&marks)
	lock := plain.leaseLock(t.Context(), "plain")
	now := metav1.NewTime(time.Now())
	if err := lock.Create(t.Context(), resourcelock.LeaderElectionRecord{HolderIdentity: "plain", LeaseDurationSeconds: 15, AcquireTime: now, RenewTime: now}); err != nil {
		t.Fatal(err)
	}
	_, got, ok := shardDaemon(t, kube, ns, 2, 1).peerPast(t.Context(), state.MovedFrom{Count: 1}, 0)
	if !ok || !maps.Equal(got, map[string]string{"/configmaps/": "7"}) {
		t.Errorf("a shard reads the marks of the set without shards as %v (%v)", got, ok)
	}
}

package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/state"
)

// shardDaemon is the daemon of shard index of count, electing on Leases
// dw-INDEX in ns, as far as its shard and its Leases go.
func shardDaemon(t *testing.T, kube kubernetes.Interface, ns string, count, index int) *daemon {
	t.Helper()
	file := loadPlan(t, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
leaderElection: {namespace: %[1]s, name: dw}
shards: {count: %[2]d, index: %[3]d}
actions: [{name: out, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], actions: [out]}]
`, ns, count, index))
	return &daemon{o: Options{File: file, Kube: kube}, log: slog.New(slog.NewTextHandler(io.Discard, nil)), shard: dyninformer.NewShard(count, index, false)}
}

// takeOver is shard index of d's spec taking its Lease over as elect does:
// the labels from the Lease as it was, written with the holder's renewal.
func takeOver(t *testing.T, d *daemon, id string) {
	t.Helper()
	lock := d.leaseLock(t.Context(), id)
	now := metav1.NewTime(time.Now())
	rec := resourcelock.LeaderElectionRecord{HolderIdentity: id, LeaseDurationSeconds: 15, AcquireTime: now, RenewTime: now}
	if _, _, err := lock.Get(t.Context()); err != nil {
		if err := lock.Create(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := lock.Update(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
}

// A 2 → 3 reshard with leaderElection, against the API server: shard 0 of
// the old spec stopped an hour ago (its Lease still says count 2, renewed
// then). The new shard 2 reads when it ended before shard 0 of the new spec
// takes the Lease over and after: the same second both ways; a standby of
// the new shard 0 that reads the Lease after the takeover keeps it too. And
// shard 2, new to the set, keeps the previous spec and both ends in its
// file, marked as a new shard's.
func TestLeaseEndEitherOrder(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ns := fmt.Sprintf("shard-move-%d", time.Now().UnixNano()%100000)
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ended := metav1.NewMicroTime(time.Now().Add(-time.Hour).Add(-300 * time.Millisecond))
	for i := range 2 { // the old set, stopped: each Lease released then
		holder, one := "", int32(1)
		_, err := kube.CoordinationV1().Leases(ns).Create(t.Context(), &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dw-%d", i), Labels: map[string]string{labelShardCount: "2"}},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &one, RenewTime: &ended, AcquireTime: &ended},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	want := time.Unix(ended.Unix(), 0)
	reader := shardDaemon(t, kube, ns, 3, 2)
	prev := state.MovedFrom{Count: 2}
	before, _, ok := reader.peerPast(t.Context(), prev, 0)
	if !ok || !before.Equal(want) {
		t.Fatalf("read before the takeover: %v (%v), want %v", before, ok, want)
	}
	takeOver(t, shardDaemon(t, kube, ns, 3, 0), "new-0")
	after, _, ok := reader.peerPast(t.Context(), prev, 0)
	if !ok || !after.Equal(before) {
		t.Errorf("read after the takeover: %v (%v), want %v as before", after, ok, before)
	}
	takeOver(t, shardDaemon(t, kube, ns, 3, 0), "standby-0")
	if again, _, ok := reader.peerPast(t.Context(), prev, 0); !ok || !again.Equal(before) {
		t.Errorf("after a standby of the new spec took it: %v (%v), want %v", again, ok, before)
	}
	if _, _, ok := reader.peerPast(t.Context(), state.MovedFrom{Count: 4}, 0); ok {
		t.Error("a Lease tells the end of a spec it never showed")
	}

	store, err := state.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	takeOver(t, reader, "new-2") // its Lease as elect read it first: none
	if err := reader.shardState(t.Context(), store); err != nil {
		t.Fatal(err)
	}
	_ = store.View(func(tx *state.Tx) error {
		m, ok := tx.MovedFrom()
		e0, ok0 := m.End(0)
		e1, ok1 := m.End(1)
		if !ok || m.Count != 2 || !ok0 || !ok1 || !e0.Equal(want) || !e1.Equal(want) || !tx.NewShard() {
			t.Errorf("the new shard kept %+v (%v), new shard %v; want count 2, both ends %v", m, ok, tx.NewShard(), want)
		}
		return nil
	})
}

// The labels a holder writes: its spec; the spec the Lease showed before and
// its renewTime, when that is another spec; kept when it is this one.
func TestNextLeaseLabels(t *testing.T) {
	t.Parallel()
	renewed := metav1.NewMicroTime(time.Unix(1_800_000_000, 500e6))
	old := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{labelShardCount: "2"}},
		Spec: coordinationv1.LeaseSpec{RenewTime: &renewed}}
	cur := state.MovedFrom{Count: 3}
	now := time.Unix(1_800_000_100, 0)
	next := nextLeaseLabels(old, cur, now)
	want := map[string]string{labelShardCount: "3", labelShardBy: "uid", labelPrevCount: "2", labelPrevBy: "uid", labelPrevEnded: "1800000000"}
	for k, v := range want {
		if next[k] != v {
			t.Errorf("%s = %q, want %q", k, next[k], v)
		}
	}
	later := metav1.NewMicroTime(now)
	taken := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Labels: next}, Spec: coordinationv1.LeaseSpec{RenewTime: &later}}
	if again := nextLeaseLabels(taken, cur, now.Add(time.Hour)); again[labelPrevEnded] != "1800000000" || again[labelPrevCount] != "2" {
		t.Errorf("the same spec again: %v", again)
	}
	a, _, okA := leasePast(old, state.MovedFrom{Count: 2}, false)
	b, _, okB := leasePast(taken, state.MovedFrom{Count: 2}, false)
	if !okA || !okB || !a.Equal(b) {
		t.Errorf("before the takeover %v (%v), after %v (%v): want the same second", a, okA, b, okB)
	}
	if shrunk := nextLeaseLabels(old, state.MovedFrom{Count: 1}, now); shrunk[labelShrunkTo] != "1" || shrunk[labelShrunkAt] != "1800000100" {
		t.Errorf("a shrink: %v", shrunk)
	}
}

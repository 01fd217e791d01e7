package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/state"
)

// oldSetStopped makes a namespace with the Leases dw-0 … dw-(count-1) of a
// stopped set of count shards, each released at ended.
func oldSetStopped(t *testing.T, kube kubernetes.Interface, count int, ended time.Time) string {
	t.Helper()
	ns := fmt.Sprintf("shard-review-%d", time.Now().UnixNano()%1000000)
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	at := metav1.NewMicroTime(ended)
	for i := range count {
		holder, one := "", int32(1)
		_, err := kube.CoordinationV1().Leases(ns).Create(t.Context(), &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dw-%d", i), Labels: map[string]string{labelShardCount: fmt.Sprint(count)}},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &one, RenewTime: &at, AcquireTime: &at},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	return ns
}

func openStore(t *testing.T, path string) *state.Store {
	t.Helper()
	s, err := state.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkMovedFrom checks that the file kept the previous spec of count 2
// with shard 1's end as its Lease said.
func checkMovedFrom(t *testing.T, s *state.Store, want time.Time, newShard bool) {
	t.Helper()
	_ = s.View(func(tx *state.Tx) error {
		m, ok := tx.MovedFrom()
		e1, ok1 := m.End(1)
		if !ok || m.Count != 2 || !ok1 || !e1.Equal(want) || tx.NewShard() != newShard {
			t.Errorf("after the restart the file keeps %+v (%v), new shard %v; want count 2, shard 1's end %v (its Lease), new shard %v",
				m, ok, tx.NewShard(), want, newShard)
		}
		return nil
	})
}

// Shard 0 of a 2 → 3 reshard is killed after the reshard of its file
// committed but before it kept what the Leases say (during the list of its
// old share, say). Started again, its file is under the new spec already:
// it must still keep the old shards' ends from the Leases, else objects
// that moved in from shard 1 (which a StatefulSet stops before shard 0) are
// compared with shard 0's own, later end, and their changes in between are
// lost.
func TestReshardKilledBeforeLeasesKeptKeepsThemAtRestart(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ended := time.Now().Add(-time.Hour).Truncate(time.Second)
	ns := oldSetStopped(t, kube, 2, ended)
	path := filepath.Join(t.TempDir(), "s.db")
	s := openStore(t, path)
	if _, err := s.Reshard("0/2 by uid", func(string, string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkStopped(); err != nil { // the old shard 0 stops (later than shard 1)
		t.Fatal(err)
	}
	first := shardDaemon(t, kube, ns, 3, 0)
	takeOver(t, first, "new-0")
	if _, err := first.reshardState(s); err != nil { // then kill -9
		t.Fatal(err)
	}
	s.Close()

	s = openStore(t, path)
	defer s.Close()
	again := shardDaemon(t, kube, ns, 3, 0)
	takeOver(t, again, "new-0-again")
	if err := again.shardState(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	checkMovedFrom(t, s, ended, false)
}

// The new shard 2 of a 2 → 3 reshard takes its Lease (written at once with
// count 3) and is killed before it kept the previous spec in its file (or
// before it opened it). Started again (or a standby taking over), its Lease
// shows count 3 already: it must still be a shard new to the set, else its
// whole share starts as a first start's baseline and every change of it
// made while the set was stopped is lost.
func TestNewShardKilledAfterTakeoverIsStillNew(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ended := time.Now().Add(-time.Hour).Truncate(time.Second)
	ns := oldSetStopped(t, kube, 2, ended)
	takeOver(t, shardDaemon(t, kube, ns, 3, 2), "new-2") // then kill -9, no file yet

	s := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	defer s.Close()
	again := shardDaemon(t, kube, ns, 3, 2)
	takeOver(t, again, "new-2-again")
	if err := again.shardState(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	checkMovedFrom(t, s, ended, true)
}

// A shard that loses its Lease (or is stopped) while it lists its old share
// after a reshard must leave the records it set aside as they are, for the
// next leader to settle: dropping them makes the deletes made while the set
// was stopped, of objects that moved away, lost for good.
func TestMovedAwayKeptWhenTheLeaseEndsWhileListing(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ns := oldSetStopped(t, kube, 2, time.Now().Add(-time.Hour))
	res := state.Resource{Resource: "configmaps"}
	s := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	defer s.Close()
	if _, err := s.Reshard("1/2 by uid", func(string, string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	err := s.Update(func(tx *state.Tx) error {
		for i := range 20 { // some of them move away at 2 → 3
			if err := tx.Put(res, string(uuid.NewUUID()), &state.Record{Namespace: ns, Name: fmt.Sprintf("cm-%d", i), ResourceVersion: "1"}); err != nil {
				return err
			}
		}
		return tx.SetBaseline(res.In(ns))
	})
	if err != nil {
		t.Fatal(err)
	}
	informers, err := dyninformer.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	d := shardDaemon(t, kube, ns, 3, 1)
	d.o.Informers, d.o.Discovery = informers, discovery.NewDiscoveryClientForConfigOrDie(env.Config)
	r, err := d.reshardState(s)
	if err != nil {
		t.Fatal(err)
	}
	_, before, _ := s.MovedAway()
	if len(before[res]) == 0 || r == nil {
		t.Fatal("nothing moved away")
	}
	lease, lost := context.WithCancel(t.Context())
	lost() // the Lease ends as the list starts
	_ = d.settleMovedAway(lease, s)
	if _, after, _ := s.MovedAway(); len(after[res]) != len(before[res]) {
		t.Errorf("the Lease ended while listing: %d of %d records set aside are left for the next leader (the others' deletes can never replay)", len(after[res]), len(before[res]))
	}
}

// A shard's Lease says it joins from the takeover until its state file is
// brought to the spec; a holder that got there writes so at its next
// renewal, and a later process of the shard is no longer new to the set.
func TestShardLeaseJoiningCleared(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ns := oldSetStopped(t, kube, 2, time.Now().Add(-time.Hour))
	d := shardDaemon(t, kube, ns, 3, 2)
	takeOver(t, d, "new-2")
	label := func() string {
		l, err := kube.CoordinationV1().Leases(ns).Get(t.Context(), "dw-2", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Labels[labelJoining]
	}
	if got := label(); got != "1" {
		t.Errorf("joining %q at the takeover, want 1", got)
	}
	d.joined()
	now := metav1.NewTime(time.Now()) // its next renewal, through the same lock
	if _, _, err := d.join.Get(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := d.join.Update(t.Context(), resourcelock.LeaderElectionRecord{HolderIdentity: "new-2", LeaseDurationSeconds: 15, AcquireTime: now, RenewTime: now}); err != nil {
		t.Fatal(err)
	}
	if got := label(); got != "0" {
		t.Errorf("joining %q once joined, want 0", got)
	}
	later := shardDaemon(t, kube, ns, 3, 2)
	later.ownLease, _ = kube.CoordinationV1().Leases(ns).Get(t.Context(), "dw-2", metav1.GetOptions{})
	if later.newToSet(t.Context()) {
		t.Error("a shard that joined is new to the set again")
	}
}

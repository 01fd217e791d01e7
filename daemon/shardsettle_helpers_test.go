package daemon

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/state"
)

// movedObject creates, in ns, a ConfigMap that is shard 1's of 2 and shard
// 2's of 3.
func movedObject(t *testing.T, kube kubernetes.Interface, ns string) *corev1.ConfigMap {
	t.Helper()
	for i := 0; ; i++ {
		cm, err := kube.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uid := string(cm.UID)
		if dyninformer.NewShard(2, 1, false).Owns(uid, ns) && dyninformer.NewShard(3, 2, false).Owns(uid, ns) {
			return cm
		}
	}
}

// movedFileAndShard1 is movedSetUp's end with x given: old shard 1's file
// recording x, and the new shard 1, its Lease taken over.
func movedFileAndShard1(t *testing.T, kube kubernetes.Interface, ns string, x *corev1.ConfigMap) (*state.Store, *daemon) {
	t.Helper()
	old := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	t.Cleanup(func() { old.Close() })
	if _, err := old.Reshard("1/2 by uid", func(string, string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	recordListed(t, old, ns, x)
	informers, err := dyninformer.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	one := shardDaemon(t, kube, ns, 3, 1)
	one.o.Informers, one.o.Discovery = informers, discovery.NewDiscoveryClientForConfigOrDie(env.Config)
	takeOver(t, one, "new-1")
	return old, one
}

// era1Listed is shard 2 of a 3-shard set of an earlier era taking dw-2 over,
// bringing its file to its spec, listing and saying so (two renewals: the
// second gives listed-rv). Its holder is then stopped (releaseLease) or
// killed (killedLongAgo) by the caller.
func era1Listed(t *testing.T, kube kubernetes.Interface, ns string) *daemon {
	t.Helper()
	era1 := shardDaemon(t, kube, ns, 3, 2)
	takeOver(t, era1, "era1-2")
	era1.joined()
	renew(t, era1, "era1-2")
	era1.listed()
	renew(t, era1, "era1-2")
	renew(t, era1, "era1-2")
	return era1
}

// killedLongAgo makes Lease name in ns one whose holder was killed two
// hours ago: still held, last renewed then.
func killedLongAgo(t *testing.T, kube kubernetes.Interface, ns, name string) {
	t.Helper()
	l, err := kube.CoordinationV1().Leases(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	then := metav1.NewMicroTime(time.Now().Add(-2 * time.Hour))
	l.Spec.RenewTime, l.Spec.AcquireTime = &then, &then
	if _, err := kube.CoordinationV1().Leases(ns).Update(t.Context(), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// oldSetRanSince renews the Leases of oldSetStopped's 2-shard set once
// more: that set ran after an earlier era.
func oldSetRanSince(t *testing.T, kube kubernetes.Interface, ns string) {
	t.Helper()
	for i := range 2 {
		l, err := kube.CoordinationV1().Leases(ns).Get(t.Context(), fmt.Sprintf("dw-%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		renewed := metav1.NewMicroTime(l.Spec.RenewTime.Add(time.Second))
		l.Spec.RenewTime = &renewed
		if _, err := kube.CoordinationV1().Leases(ns).Update(t.Context(), l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// joinedShard2 is the new shard 2 of the 2 → 3 reshard taking dw-2 over,
// bringing s, its file, to the spec and renewing: it has joined and not yet
// said it listed.
func joinedShard2(t *testing.T, kube kubernetes.Interface, ns string, s *state.Store) *daemon {
	t.Helper()
	two := shardDaemon(t, kube, ns, 3, 2)
	takeOver(t, two, "new-2")
	if err := two.shardState(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	two.joined()
	renew(t, two, "new-2")
	return two
}

// settleWithoutShard2 has shard 1 settle old, waiting at most 3 s for a new
// shard 2 that never starts, and checks what must hold then: it waited the
// whole time (why says what would have ended the wait early), and x, never
// deleted, is not kept as deleted.
func settleWithoutShard2(t *testing.T, one *daemon, old *state.Store, x *corev1.ConfigMap, why string) {
	t.Helper()
	one.settleWait = 3 * time.Second
	start := time.Now()
	if err := one.shardState(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 3*time.Second {
		t.Errorf("shard 1 settled after %s although the new shard 2 never started: "+why, took)
	}
	if holds(old, string(x.UID)) {
		t.Errorf("x exists and was never deleted, yet shard 1 kept its record as deleted: its delete replays (a delete that never happened)")
	}
}

// chainSet is a 2 → 3 reshard with two objects that each move up one
// shard: x0 from shard 0 to shard 1, x1 from shard 1 to shard 2. It returns
// them, the old files of shards 0 and 1 (each recording its object) and the
// new shards 0 and 1 (settleWait 4 s, sharing one informers' client), their
// Leases not yet taken over.
func chainSet(t *testing.T, kube kubernetes.Interface, ns string) (x0, x1 *corev1.ConfigMap, file0, file1 *state.Store, zero, one *daemon) {
	t.Helper()
	for i := 0; x0 == nil || x1 == nil; i++ {
		cm, err := kube.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uid := string(cm.UID)
		switch {
		case x0 == nil && dyninformer.NewShard(2, 0, false).Owns(uid, ns) && dyninformer.NewShard(3, 1, false).Owns(uid, ns):
			x0 = cm
		case x1 == nil && dyninformer.NewShard(2, 1, false).Owns(uid, ns) && dyninformer.NewShard(3, 2, false).Owns(uid, ns):
			x1 = cm
		}
	}
	informers, err := dyninformer.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	disc := discovery.NewDiscoveryClientForConfigOrDie(env.Config)
	file0, file1 = oldFileWith(t, 0, ns, x0), oldFileWith(t, 1, ns, x1)
	zero, one = shardDaemon(t, kube, ns, 3, 0), shardDaemon(t, kube, ns, 3, 1)
	for _, d := range []*daemon{zero, one} {
		d.o.Informers, d.o.Discovery = informers, disc
		d.settleWait = 4 * time.Second
	}
	return x0, x1, file0, file1, zero, one
}

// recordListed records cm in s as a listed object of the ConfigMaps of ns,
// and that scope as listed (its baseline set).
func recordListed(t *testing.T, s *state.Store, ns string, cm *corev1.ConfigMap) {
	t.Helper()
	res := state.Resource{Resource: "configmaps"}
	if err := s.Update(func(tx *state.Tx) error {
		if err := tx.Put(res, string(cm.UID), &state.Record{Namespace: ns, Name: cm.Name, ResourceVersion: cm.ResourceVersion}); err != nil {
			return err
		}
		return tx.SetBaseline(res.In(ns))
	}); err != nil {
		t.Fatal(err)
	}
}

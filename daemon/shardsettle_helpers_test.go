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
	res := state.Resource{Resource: "configmaps"}
	old := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	t.Cleanup(func() { old.Close() })
	if _, err := old.Reshard("1/2 by uid", func(string, string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	err := old.Update(func(tx *state.Tx) error {
		if err := tx.Put(res, string(x.UID), &state.Record{Namespace: ns, Name: x.Name, ResourceVersion: x.ResourceVersion}); err != nil {
			return err
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

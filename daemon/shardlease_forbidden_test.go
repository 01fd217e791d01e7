package daemon

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A Lease of the shard set that the shard may not read (a Role written by
// hand that names the current count's Leases only: after a shrink, the Lease
// of a shard of the larger set) is said at WARN, not taken silently as absent.
func TestShardLeaseForbiddenIsSaid(t *testing.T) {
	t.Parallel()
	kube := fake.NewClientset()
	kube.PrependReactor("get", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, a.(k8stesting.GetAction).GetName(), nil)
	})
	d := shardDaemon(t, kube, "ns", 2, 0)
	var logs bytes.Buffer
	d.log = slog.New(slog.NewTextHandler(&logs, nil))
	if _, ok := d.lease(t.Context(), "dw-1"); ok {
		t.Fatal("a forbidden Lease read as there")
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "ns/dw-1") {
		t.Errorf("a forbidden Lease is not said at WARN with its name:\n%s", logs.String())
	}
	logs.Reset()
	kube2 := fake.NewClientset()
	d2 := shardDaemon(t, kube2, "ns", 2, 0)
	d2.log = slog.New(slog.NewTextHandler(&logs, nil))
	if _, ok := d2.lease(t.Context(), "dw-1"); ok || logs.Len() != 0 {
		t.Errorf("a Lease that does not exist: ok %v, logs %q (want nothing said)", ok, logs.String())
	}
}

package daemon

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/dynwatch/dynwatch/dyninformer"
)

// As TestSettleIgnoresAStaleListedLeaseOfAnEarlierSet (3 shards, shrunk to
// 2, grown back to 3: dw-2 still says count 3, listed 1, listed-rv of the
// first era), but shard 1's own Lease is not there when the new shard 1
// starts: an operator deleted it to force a failover (or elect's Get of it
// failed: shardLeaseLabels takes any error for "no Lease"). d.ownLease is
// nil, listedAfter is "" ("any"), and the stale era-1 Lease of shard 2,
// not running, counts as the new shard 2's listing: shard 1 lists its old
// share at that stale resourceVersion, from before x existed, and keeps x's
// record as deleted: a delete that never happened is replayed, and the
// settle does not wait for the new shard 2 at all.
func TestSettleIgnoresAStaleListedLeaseWhenItsOwnLeaseIsGone(t *testing.T) {
	t.Parallel()
	kube, x, ns, old, _ := movedSetUpAfter(t, func(kube kubernetes.Interface, ns string) {
		era1 := era1Listed(t, kube, ns)
		if err := releaseLease(era1.join, "era1-2", 5*time.Second); err != nil {
			t.Fatal(err)
		}
	})
	// Shard 1's Lease is deleted; the next process of shard 1 takes it anew.
	if err := kube.CoordinationV1().Leases(ns).Delete(t.Context(), "dw-1", metav1.DeleteOptions{}); err != nil && !errors.IsNotFound(err) {
		t.Fatal(err)
	}
	one := shardDaemon(t, kube, ns, 3, 1)
	informers, err := dyninformer.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	one.o.Informers, one.o.Discovery = informers, discovery.NewDiscoveryClientForConfigOrDie(env.Config)
	takeOver(t, one, "new-1b")
	settleWithoutShard2(t, one, old, x, "with its own Lease gone (ownLease nil, listedAfter \"\") it took the Lease left by the 3-shard set before the shrink as shard 2's listing")
	if _, err := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), x.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("x should still exist: %v", err)
	}
}

// failFirstGet fails the first GET of path with a 500, as an API server
// that is briefly overloaded (or a gateway timing out) answers.
type failFirstGet struct {
	rt     http.RoundTripper
	path   string
	failed atomic.Bool
}

func (f *failFirstGet) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && r.URL.Path == f.path && f.failed.CompareAndSwap(false, true) {
		body := `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"InternalError","code":500,"message":"etcdserver: request timed out"}`
		return &http.Response{StatusCode: http.StatusInternalServerError, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	}
	return f.rt.RoundTrip(r)
}

// The same, with shard 1's Lease there (written by the old set) but elect's
// one read of it at start failing once (a 500): shardLeaseLabels takes the
// error for "no Lease", d.ownLease is nil, and listedAfter "" lets the
// stale era-1 Lease of shard 2 count — and SetListedAfter keeps "" in the
// file, so every later start judges the same.
func TestSettleIgnoresAStaleListedLeaseWhenItsOwnLeaseReadFails(t *testing.T) {
	t.Parallel()
	kube, x, ns, old, _ := movedSetUpAfter(t, func(kube kubernetes.Interface, ns string) {
		era1 := era1Listed(t, kube, ns)
		if err := releaseLease(era1.join, "era1-2", 5*time.Second); err != nil {
			t.Fatal(err)
		}
	})
	// movedSetUpAfter's shard 1 took dw-1 over already; put the old set's
	// Lease back as it was (count 2), as if that takeover never happened.
	l, err := kube.CoordinationV1().Leases(ns).Get(t.Context(), "dw-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Labels[labelShardCount] = "2"
	for _, k := range []string{labelPrevCount, labelPrevBy, labelPrevEnded, labelJoining, labelListed, labelListedRV} {
		delete(l.Labels, k)
	}
	if _, err := kube.CoordinationV1().Leases(ns).Update(t.Context(), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return &failFirstGet{rt: rt, path: "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases/dw-1"}
	}
	one := shardDaemon(t, kubernetes.NewForConfigOrDie(cfg), ns, 3, 1)
	informers, err := dyninformer.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	one.o.Informers, one.o.Discovery = informers, discovery.NewDiscoveryClientForConfigOrDie(env.Config)
	takeOver(t, one, "new-1b")
	if one.ownLease != nil {
		t.Fatal("the read did not fail")
	}
	settleWithoutShard2(t, one, old, x, "one failed read of its own Lease at start (ownLease nil, listedAfter \"\") let the Lease left by the 3-shard set count as shard 2's listing")
}

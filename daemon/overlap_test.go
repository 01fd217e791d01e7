package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// cutOff is a transport that, once cut, lets no Lease request through: each
// hangs until its context ends, as to an API server this replica cannot reach.
type cutOff struct {
	rt  http.RoundTripper
	cut atomic.Bool
}

func (c *cutOff) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.cut.Load() && strings.Contains(r.URL.Path, "/leases") {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	return c.rt.RoundTrip(r)
}

// whenLogged is a log that notes when a message containing what was first
// written.
type whenLogged struct {
	t    *testing.T
	what string
	mu   sync.Mutex
	at   time.Time
}

func (w *whenLogged) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.at.IsZero() && strings.Contains(string(p), w.what) {
		w.at = time.Now()
	}
	w.mu.Unlock()
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (w *whenLogged) time() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at
}

// A leader that can no longer renew its Lease (the API server out of its
// reach) stops delivering before another replica can take the Lease over:
// within renewDeadline of its last renewal, not after a release it cannot make
// either (client-go tries that before it ends the leading context).
func TestLeaderCutOffStopsBeforeTheTakeover(t *testing.T) {
	ns := fmt.Sprintf("cutoff-%d", time.Now().UnixNano()%100000)
	kube := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const durations = "leaseDuration: 3s, renewDeadline: 2s, retryPeriod: 200ms"
	file := loadPlan(t, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
leaderElection: {namespace: %[1]s, name: dynwatch, %[2]s}
actions: [{name: out, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%[1]s], actions: [out]}]
`, ns, durations))
	informers, err := dyninformer.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	link := &cutOff{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { link.rt = rt; return link })
	logs := &whenLogged{t: t, what: "lost the lease: delivery stopped at once"}
	log := slog.New(slog.NewTextHandler(logs, nil))
	d := &daemon{
		o: Options{File: file, Kube: kubernetes.NewForConfigOrDie(cfg), Informers: informers, Discovery: discovery.NewDiscoveryClientForConfigOrDie(env.Config),
			Identity: "me", Logger: log, Stdout: io.Discard, ConfigCheckInterval: time.Second},
		log: log, file: file, start: time.Now(),
	}
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan error, 1)
	go func() { returned <- d.elect(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-returned:
			if err != nil {
				t.Errorf("elect at shutdown: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("elect still runs 30s after the shutdown")
		}
	})
	testenv.WaitFor(t, "this replica to act", 30*time.Second, d.acting.Load)

	link.cut.Store(true)
	cutAt := time.Now()
	took := make(chan time.Time, 1)
	other, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: ns, Name: "dynwatch"}, Client: kube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: "other"}},
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { took <- time.Now() },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	octx, ocancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { other.Run(octx); close(ran) }()
	t.Cleanup(func() { ocancel(); <-ran })

	var tookAt time.Time
	select {
	case tookAt = <-took:
	case <-time.After(30 * time.Second):
		t.Fatal("the other replica did not take the Lease over within 30s")
	}
	// The halt is logged a moment after it: wait for the log, then compare.
	testenv.WaitFor(t, "the cut-off replica to halt", 30*time.Second, func() bool { return !logs.time().IsZero() })
	if halted := logs.time(); !halted.Before(tookAt) {
		t.Errorf("the cut-off replica delivered until %s after the cut, and the other replica led from %s on: both acted for %s",
			halted.Sub(cutAt).Round(time.Millisecond), tookAt.Sub(cutAt).Round(time.Millisecond), halted.Sub(tookAt).Round(time.Millisecond))
	}
}

// releaseLease clears the holder of a Lease this replica holds, and leaves
// one that another replica holds as it is.
func TestReleaseLeaseGivesUpOnlyItsOwn(t *testing.T) {
	t.Parallel()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ns := fmt.Sprintf("release-%d", time.Now().UnixNano()%100000)
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, holder := range []string{"me", "other"} {
		lock := &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: ns, Name: holder}, Client: kube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: holder}}
		now := metav1.NewTime(time.Now())
		if err := lock.Create(t.Context(), resourcelock.LeaderElectionRecord{HolderIdentity: holder, LeaseDurationSeconds: 15, AcquireTime: now, RenewTime: now}); err != nil {
			t.Fatal(err)
		}
		if err := releaseLease(lock, "me", 10*time.Second); err != nil {
			t.Fatalf("release of the Lease %s holds: %v", holder, err)
		}
		rec, _, err := lock.Get(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		switch want := map[string]string{"me": "", "other": "other"}[holder]; {
		case rec.HolderIdentity != want:
			t.Errorf("Lease held by %s, released by me: holder %q, want %q", holder, rec.HolderIdentity, want)
		case want == "" && rec.LeaseDurationSeconds != 1:
			t.Errorf("released Lease lasts %ds, want 1", rec.LeaseDurationSeconds)
		}
	}
}

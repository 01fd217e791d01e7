package daemon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/internal/testenv"
	"github.com/dynwatch/dynwatch/watcher"
)

// inTerm counts the goroutines whose stack runs through a term of leader
// election: the one that runs the term and, while acting, the one that acts.
func inTerm(t *testing.T) int {
	t.Helper()
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 2); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range strings.Split(buf.String(), "\n\n") {
		if strings.Contains(g, "daemon.(*daemon).term") {
			n++
		}
	}
	return n
}

// electing runs a daemon of one replica, "me", in leader election on a Lease
// of a new namespace, with the actions given (YAML flow list, named out) and
// a rule on that namespace's ConfigMaps; it returns the daemon, the namespace
// and whether elect has returned, with what. Each lost Lease is won back once
// it expires (2s).
func electing(t *testing.T, actions string) (*daemon, string, func() (bool, error)) {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ns := fmt.Sprintf("%s-%d", strings.ToLower(strings.TrimPrefix(t.Name(), "Test")), time.Now().UnixNano()%100000)
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	file := loadPlan(t, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
leaderElection: {namespace: %[1]s, name: dynwatch, leaseDuration: 2s, renewDeadline: 1s, retryPeriod: 200ms}
actions: %[2]s
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%[1]s], actions: [out]}]
`, ns, actions))
	informers, err := dyninformer.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(testLog{t}, nil))
	d := &daemon{
		o: Options{File: file, Kube: kube, Informers: informers, Discovery: discovery.NewDiscoveryClientForConfigOrDie(env.Config),
			Identity: "me", Logger: log, Stdout: io.Discard, ConfigCheckInterval: time.Second},
		log: log, file: file, start: time.Now(),
	}
	ctx, cancel := context.WithCancel(context.Background())
	var electErr error
	returned := make(chan struct{})
	go func() { electErr = d.elect(ctx); close(returned) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-returned:
			if electErr != nil {
				t.Errorf("elect at shutdown: %v", electErr)
			}
		case <-time.After(30 * time.Second):
			t.Error("elect still runs 30s after the shutdown")
		}
	})
	ended := func() (bool, error) {
		select {
		case <-returned:
			return true, electErr
		default:
			return false, nil
		}
	}
	return d, ns, ended
}

// Every lost Lease ends its term whole: no goroutine of a term that ended is
// left waiting for the shutdown.
func TestNoGoroutineLeftPerLostLease(t *testing.T) {
	d, ns, ended := electing(t, "[{name: out, log: {}}]")
	var counts []int
	for range 3 {
		testenv.WaitFor(t, "this replica to act", 30*time.Second, d.acting.Load)
		counts = append(counts, inTerm(t))
		steal(t, d.o.Kube, ns, "dynwatch")
		testenv.WaitFor(t, "this replica to lose the Lease", 30*time.Second, func() bool { return !d.acting.Load() })
	}
	testenv.WaitFor(t, "this replica to act again", 30*time.Second, d.acting.Load)
	counts = append(counts, inTerm(t))
	for i, n := range counts[1:] {
		if n != counts[0] {
			t.Errorf("goroutines in a term: %v; after %d lost Leases there are %d more", counts, i+1, n-counts[0])
			break
		}
	}
	if ended, err := ended(); ended {
		t.Errorf("elect returned %v while the Lease came and went", err)
	}
}

// Without state.path, a replica that loses the Lease with events queued (its
// receiver down) loses them, says so, and stands by again: it does not stop.
func TestLostLeaseWithoutStateStandsBy(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	t.Cleanup(down.Close)
	d, ns, ended := electing(t, fmt.Sprintf("[{name: out, webhook: {url: %q, retry: {max: 1000}}}]", down.URL))
	testenv.WaitFor(t, "this replica to act and sync", 30*time.Second, func() bool {
		w := d.current.Load()
		return w != nil && w.Synced() // every informer, the CRD one included
	})
	w := d.current.Load()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "queued", Namespace: ns}}
	if _, err := d.o.Kube.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the event to be queued", 30*time.Second, func() bool { return enqueued(w, "out") == 1 })
	steal(t, d.o.Kube, ns, "dynwatch")
	testenv.WaitFor(t, "this replica to lose the Lease", 30*time.Second, func() bool { return !d.acting.Load() })
	testenv.WaitFor(t, "this replica to lead again, or stop", 30*time.Second, func() bool {
		stopped, _ := ended()
		return d.acting.Load() || stopped
	})
	if stopped, err := ended(); stopped {
		t.Errorf("elect returned %v after the lost Lease; the replica should stand by", err)
	}
}

// enqueued is how many deliveries w's queues of action accepted.
func enqueued(w *watcher.Watcher, action string) uint64 {
	for _, s := range w.QueueSamples() {
		if s.Action == action {
			return s.Enqueued
		}
	}
	return 0
}

// steal makes another replica the Lease's holder, as if it had taken over.
func steal(t *testing.T, kube kubernetes.Interface, ns, name string) {
	t.Helper()
	leases := kube.CoordinationV1().Leases(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // the holder renews it meanwhile
		l, err := leases.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		thief, now := "thief", metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity = &thief
		l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
		_, err = leases.Update(t.Context(), l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

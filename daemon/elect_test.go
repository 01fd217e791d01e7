package daemon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
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
	"github.com/dynwatch/dynwatch/plan"
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

// Every lost Lease ends its term whole: no goroutine of a term that ended is
// left waiting for the shutdown.
func TestNoGoroutineLeftPerLostLease(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ns := fmt.Sprintf("lost-lease-%d", time.Now().UnixNano()%100000)
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, `apiVersion: dynwatch/v1alpha1
leaderElection: {namespace: %[1]s, name: dynwatch, leaseDuration: 2s, renewDeadline: 1s, retryPeriod: 200ms}
actions: [{name: out, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%[1]s], actions: [out]}]
`, ns), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := plan.Load(path)
	if err != nil {
		t.Fatal(err)
	}
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
	done := make(chan error, 1)
	go func() { done <- d.elect(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("elect: %v", err)
		}
	}()

	var counts []int
	for range 3 {
		testenv.WaitFor(t, "this replica to act", 30*time.Second, d.acting.Load)
		counts = append(counts, inTerm(t))
		steal(t, kube, ns, "dynwatch")
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

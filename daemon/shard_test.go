package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// A shard takes its index from $POD_NAME and elects on its own Lease,
// name-INDEX; a $POD_NAME without an ordinal stops the start, saying so.
func TestShardLeaseAndIndex(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ns := fmt.Sprintf("shard-lease-%d", time.Now().UnixNano()%100000)
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	file := loadPlan(t, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
leaderElection: {namespace: %[1]s, name: dw, leaseDuration: 2s, renewDeadline: 1s, retryPeriod: 200ms}
shards: {count: 3}
actions: [{name: out, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%[1]s], actions: [out]}]
`, ns))
	informers, err := dyninformer.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	run := func(ctx context.Context, pod string) (error, string) {
		t.Setenv("POD_NAME", pod)
		var logs bytes.Buffer
		err := Run(ctx, Options{File: file, Kube: kube, Informers: informers, Discovery: discovery.NewDiscoveryClientForConfigOrDie(env.Config),
			Identity: "me", Logger: slog.New(slog.NewTextHandler(&logs, nil)), Stdout: io.Discard})
		return err, logs.String()
	}
	if err, logs := run(t.Context(), "dynwatch"); !errors.Is(err, ErrFailed) || !strings.Contains(logs, "does not end in a StatefulSet ordinal") {
		t.Errorf("POD_NAME without an ordinal: %v\n%s", err, logs)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { err, _ := run(ctx, "dynwatch-2"); done <- err }()
	testenv.WaitFor(t, "the Lease of shard 2", 30*time.Second, func() bool {
		l, err := kube.CoordinationV1().Leases(ns).Get(t.Context(), "dw-2", metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "me"
	})
	if _, err := kube.CoordinationV1().Leases(ns).Get(t.Context(), "dw", metav1.GetOptions{}); err == nil {
		t.Error("a shard took the Lease without its index")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}

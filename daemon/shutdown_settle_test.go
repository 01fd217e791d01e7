package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/internal/testenv"
	"github.com/dynwatch/dynwatch/metrics"
	"github.com/dynwatch/dynwatch/state"
)

// A 2 → 3 reshard: shard 1's file (old 1/2) holds a record of an object
// that moves to shard 2, so shard 1, leading, waits in openState for shard 2
// to list (awaitListed; shard 2 is not started). A shutdown (SIGTERM) comes
// meanwhile. openState only watches the Lease's context, and the term ends
// the Lease only once acting returned (stopOnShutdown waits for done): the
// shutdown is ignored for the whole wait (settleWait, 3 minutes by default;
// Kubernetes kills the pod after terminationGracePeriodSeconds, 30 s).
func TestShutdownEndsTheSettleWait(t *testing.T) {
	t.Parallel()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ns := oldSetStopped(t, kube, 2, time.Now().Add(-time.Hour).Truncate(time.Second))
	path := filepath.Join(t.TempDir(), "s.db")
	s := openStore(t, path)
	if _, err := s.Reshard("1/2 by uid", func(string, string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	res := state.Resource{Resource: "configmaps"}
	var uid string
	for uid == "" {
		u := string(uuid.NewUUID())
		if dyninformer.NewShard(2, 1, false).Owns(u, ns) && dyninformer.NewShard(3, 2, false).Owns(u, ns) {
			uid = u
		}
	}
	if err := s.Update(func(tx *state.Tx) error {
		if err := tx.Put(res, uid, &state.Record{Namespace: ns, Name: "gone", ResourceVersion: "1"}); err != nil {
			return err
		}
		return tx.SetBaseline(res.In(ns))
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	file := loadPlan(t, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
leaderElection: {namespace: %[1]s, name: dw, leaseDuration: 2s, renewDeadline: 1s, retryPeriod: 200ms}
shards: {count: 3, index: 1}
state: {path: %[2]s}
actions: [{name: out, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%[1]s], actions: [out]}]
`, ns, path))
	informers, err := dyninformer.NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := &daemon{o: Options{File: file, Kube: kube, Informers: informers, Discovery: discovery.NewDiscoveryClientForConfigOrDie(env.Config),
		Identity: "me", Logger: log, Stdout: io.Discard, ConfigCheckInterval: time.Second}, log: log, file: file, start: time.Now()}
	d.metrics = metrics.New(metrics.Sources{Queues: d.queueSamples, Watches: d.watchSamples, RuleErrors: d.ruleErrors, Clusters: d.clusterSamples})
	if err := d.setShard(); err != nil {
		t.Fatal(err)
	}
	d.settleWait = 20 * time.Second // (3 minutes in production)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	returned := make(chan error, 1)
	go func() { returned <- d.elect(ctx) }()
	testenv.WaitFor(t, "shard 1 to wait for shard 2 in openState", 30*time.Second, d.opening.Load)
	time.Sleep(time.Second)
	cancel() // SIGTERM
	start := time.Now()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Errorf("shutdown ignored: elect still runs 5s after the shutdown, waiting for shard 2 to list (it stops only when settleWait ends)")
		<-returned
		t.Logf("elect returned %s after the shutdown", time.Since(start).Round(time.Second))
	}
}

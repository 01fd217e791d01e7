package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/internal/testenv"
	"github.com/dynwatch/dynwatch/metrics"
)

// With clusters and leader election, the daemon leads on its Lease in the
// command line's cluster and starts although one cluster cannot be reached:
// /readyz names that cluster as degraded (and stays ready),
// dynwatch_cluster_up says 0 for it and 1 for the other, whose events are
// delivered with its name.
func TestClusterUnreachableAtStartWithLeaderElection(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ns := fmt.Sprintf("clusters-%d", time.Now().UnixNano()%100000)
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	file := loadPlan(t, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
leaderElection: {namespace: %[1]s, name: dynwatch, leaseDuration: 2s, renewDeadline: 1s, retryPeriod: 200ms}
server: {address: "127.0.0.1:0"}
clusters: [{name: here}, {name: gone}]
actions: [{name: out, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%[1]s], actions: [out]}]
`, ns))
	connect := func(spec config.ClusterSpec) (*dyninformer.Client, k8sdiscovery.DiscoveryInterface, error) {
		cfg := rest.CopyConfig(env.Config)
		if spec.Name == "gone" {
			cfg.Host = "https://127.0.0.1:1" // nothing listens there
		}
		c, err := dyninformer.NewClient(cfg)
		if err != nil {
			return nil, nil, err
		}
		d, err := k8sdiscovery.NewDiscoveryClientForConfig(cfg)
		return c, d, err
	}
	out := &testenv.Buffer{}
	log := slog.New(slog.NewTextHandler(testLog{t}, nil))
	d := &daemon{
		o: Options{File: file, Kube: kube, Connect: connect, Identity: "me", Logger: log, Stdout: out,
			ConfigCheckInterval: time.Second, Source: "https://unused.invalid"},
		log: log, file: file, start: time.Now(),
	}
	d.metrics = metrics.New(metrics.Sources{Watches: d.watchSamples, Clusters: d.clusterSamples, ClusterLabel: true})
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
	testenv.WaitFor(t, "the replica to lead and here to sync", 30*time.Second, func() bool {
		w := d.current.Load()
		return w != nil && len(w.Statuses()) > 1 && func() bool {
			for _, st := range w.Statuses() {
				if st.Key.Cluster == "here" && !st.Synced {
					return false
				}
			}
			return true
		}()
	})
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "here's event", 20*time.Second, func() bool { return strings.Contains(out.String(), `"cluster":"here"`) })
	ready, body := d.ready(time.Now())
	if !ready || !strings.Contains(body, "degraded: cluster gone: cannot be reached") {
		t.Errorf("/readyz = %v %q, want ready, naming gone as degraded", ready, body)
	}
	rec := httptest.NewRecorder()
	d.metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{`dynwatch_cluster_up{cluster="gone"} 0`, `dynwatch_cluster_up{cluster="here"} 1`, `dynwatch_informer_synced{cluster="here",namespace="` + ns + `",resource="configmaps"} 1`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

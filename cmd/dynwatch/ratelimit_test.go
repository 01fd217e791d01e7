package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// rateLimit spaces an action's deliveries on the wall clock of a real run:
// six events at once, two a second with a burst of one, arrive about half a
// second apart, every one of them.
func TestRateLimitSpacesDeliveries(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := testenv.Namespace(t, d)
	var mu sync.Mutex
	var at []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	cfg := writeConfig(t, t.TempDir(), fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
actions:
  - name: hook
    concurrency: 8
    webhook: {url: %q}
    rateLimit: {perSecond: 2, burst: 1}
rules:
  - name: configs
    resources: [{kind: ConfigMap}]
    namespaces: [%s]
    labelSelector: dynwatch-test=group
    actions: [hook]
`, srv.URL, ns))
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	p.waitLog("all informers synced", 30*time.Second)
	createConfigMaps(t, d, 6, "cm", ns)
	waitUntil(t, "six deliveries", 20*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(at) >= 6 }, p.stderr.String)
	p.stopOK(syscall.SIGTERM)
	mu.Lock()
	defer mu.Unlock()
	if len(at) != 6 {
		t.Fatalf("%d deliveries, want 6", len(at))
	}
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap < 400*time.Millisecond {
			t.Errorf("delivery %d came %s after the one before, want about 500ms (2 a second)", i, gap)
		}
	}
}

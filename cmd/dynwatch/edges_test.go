package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An API server that cannot be reached is said at WARN within seconds, and
// dynwatch keeps retrying until it is stopped.
func TestUnreachableAPIServerIsSaid(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, dir, `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], actions: [out]}]
`)
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", kubeconfig)
	p.waitLog(`level=WARN msg="cannot reach the API server; retrying"`, 5*time.Second)
	p.waitLog("connection refused", time.Second)
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, p.stderr.String())
	}
}

// Stopped while a receiver is down and without state.path: dynwatch says how
// many events are draining and for how long, says how many it loses, and exits
// 1 because events were neither delivered nor kept on disk.
func TestStopWithUndeliveredEventsExitsOne(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	d, ns := setupTail(t)
	cfg := writeConfig(t, t.TempDir(), fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
shutdownGrace: 1s
actions: [{name: hook, webhook: {url: %q, retry: {initialBackoff: 100ms}}}]
rules: [{name: all, resources: [{group: tail.example.com, resource: gadgets}], namespaces: [%s], actions: [hook]}]
`, srv.URL+"/secret-path", ns))
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	p.waitLog("all informers synced", 30*time.Second)
	if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, "g1", map[string]any{"n": int64(1)}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.waitLog(`level=WARN msg="action failing`, 20*time.Second)
	err := p.stop(syscall.SIGTERM)
	if code := exitCode(err); code != exitFailure {
		t.Errorf("exit code %d, want 1 (events lost)", code)
	}
	log := p.stderr.String()
	for _, want := range []string{
		`msg="draining the action's queue before stopping" action=hook events=1 "for up to"=1s`,
		`level=ERROR msg="not delivered before shutdown" action=hook id=`,
		`level=ERROR msg="stopped with undelivered events; they are lost" action=hook events=1`,
		"stopped with events neither delivered nor kept on disk: 1",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "secret-path") {
		t.Errorf("the webhook URL's path is logged:\n%s", log)
	}
}

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

	"github.com/dynwatch/dynwatch/internal/testenv"
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

// As a user who may watch nothing the config selects, run says so at WARN
// instead of running quietly with no working watch.
func TestNoWorkingWatchIsSaid(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := cmOnlyKubeconfig(t)
	cfg := writeConfig(t, dir, `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules: [{name: secrets, resources: [{group: "", resource: secrets}], actions: [out]}]
`)
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", kubeconfig)
	p.waitLog(`level=WARN msg="no working watch: every watch fails`, 20*time.Second)
	p.stopOK(syscall.SIGTERM)
}

// An API server warning (here: a deprecated CRD version) is said once at
// WARN, not on every list and watch.
func TestAPIServerWarningsOnce(t *testing.T) {
	createCRD(t, "warn.example.com", "olds", "Old", "v1", map[string]any{"deprecated": true, "deprecationWarning": "olds v1 is going away"})
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules: [{name: olds, resources: [{group: warn.example.com, resource: olds}], namespaces: [default, kube-system, kube-public], actions: [out]}]
`)
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig, "--log-level", "debug")
	p.waitLog("olds v1 is going away", 30*time.Second)
	p.waitLog("all informers synced", 30*time.Second)
	time.Sleep(2 * time.Second)
	p.stopOK(syscall.SIGTERM)
	log := p.stderr.String()
	if n := strings.Count(log, `level=WARN msg="API server warning`); n != 1 {
		t.Errorf("the warning was logged %d times at WARN, want once:\n%s", n, log)
	}
	if !strings.Contains(log, `level=DEBUG msg="API server warning" warning="olds v1 is going away"`) {
		t.Errorf("repeats are not at debug level:\n%s", log)
	}
}

// check --cluster on a glob over a group that mixes versions lists every
// resource of it, each in its one version.
func TestCheckClusterMixedVersions(t *testing.T) {
	for _, c := range []struct{ plural, kind, version string }{{"alertconfigs", "AlertConfig", "v1alpha1"}, {"scrapers", "Scraper", "v1alpha1"}, {"monitors", "Monitor", "v1"}} {
		createCRD(t, "monitoring.mix.example", c.plural, c.kind, c.version, nil)
	}
	cfg := writeConfig(t, t.TempDir(), `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: everything-monitoring, resources: [{group: "*.mix.example", resource: "*"}], actions: [out]}
  - {name: by-kind, resources: [{kind: Scraper}], actions: [out]}
`)
	var stdout string
	testenv.WaitFor(t, "the CRDs to be served", 30*time.Second, func() bool {
		_, stdout, _ = runCLI(t, "check", "--cluster", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
		return strings.Contains(stdout, "monitors") && strings.Contains(stdout, "alertconfigs") && strings.Contains(stdout, "scrapers.v1alpha1")
	})
	t.Logf("check --cluster:\n%s", stdout)
	for _, want := range []string{
		"alertconfigs.v1alpha1.monitoring.mix.example (all namespaces): list allowed, watch allowed",
		"monitors.v1.monitoring.mix.example (all namespaces): list allowed, watch allowed",
		"rule by-kind:\n  scrapers.v1alpha1.monitoring.mix.example",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("check --cluster lacks %q:\n%s", want, stdout)
		}
	}
}

// audit exits 3 when a selected resource could not be listed and nothing
// matched in the rest, 1 when something matched anyway.
func TestAuditIncompleteExitsThree(t *testing.T) {
	if err := cp.GrantListWatch(t.Context(), "audit-cm-reader", cmOnlyUser, "", "configmaps"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := cmOnlyKubeconfig(t)
	nothing := writeConfig(t, dir, `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: cms, resources: [{group: "", resource: configmaps}], when: [{path: data.nothing-has-this, op: exists}], actions: [out]}
  - {name: secrets, resources: [{group: "", resource: secrets}], actions: [out]}
`)
	code, _, stderr := runCLI(t, "audit", "--config", nothing, "--kubeconfig", kubeconfig)
	if code != exitIncomplete || !strings.Contains(stderr, "cannot list secrets") {
		t.Errorf("incomplete audit: exit %d, want 3\n%s", code, stderr)
	}
	matches := writeConfig(t, t.TempDir(), `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: cms, resources: [{group: "", resource: configmaps}], actions: [out]}
  - {name: secrets, resources: [{group: "", resource: secrets}], actions: [out]}
`)
	if code, _, _ := runCLI(t, "audit", "--config", matches, "--kubeconfig", kubeconfig); code != exitFailure {
		t.Errorf("an incomplete audit that matched: exit %d, want 1", code)
	}
}

// A rule that selects nothing says why, where a resource is named: check
// --cluster suggests a near kind and names a resource that cannot be watched.
func TestSelectsNothingSaysWhy(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: typo, resources: [{group: apps, kind: Deploymnet}], actions: [out]}
  - {name: bindings, resources: [{group: "", resource: bindings}], actions: [out]}
`)
	code, stdout, _ := runCLI(t, "check", "--cluster", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	if code != exitFailure || !strings.Contains(stdout, "did you mean kind: Deployment?") || !strings.Contains(stdout, "bindings is served but cannot be listed and watched") {
		t.Errorf("check --cluster: exit %d\n%s", code, stdout)
	}
	code, _, stderr := runCLI(t, "tail", "bindings", "--kubeconfig", cp.Kubeconfig)
	if code != exitUsage || !strings.Contains(stderr, "bindings is served but cannot be listed and watched (its verbs: create)") {
		t.Errorf("tail bindings: exit %d\n%s", code, stderr)
	}
}

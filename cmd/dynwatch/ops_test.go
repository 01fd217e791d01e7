package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// servedAddr waits for the operations server of p (configured on port 0, so
// that no port is picked, released and raced for) and returns the address it
// bound, as its log says.
func servedAddr(p *proc) string {
	p.t.Helper()
	p.waitLog("serving /metrics", 10*time.Second)
	m := regexp.MustCompile(`msg="serving /metrics[^\n]* address=(\S+)`).FindStringSubmatch(p.stderr.String())
	if m == nil {
		p.t.Fatalf("the operations server's log gives no address:\n%s", p.stderr.String())
	}
	return m[1]
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// /metrics, /healthz and /readyz on server.address: the series for one rule
// on one resource, ready once synced, and a forbidden resource reported as
// degraded in /readyz without making the daemon unready.
func TestOperationsServer(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := fmt.Sprintf("ops-%d", time.Now().UnixNano()%1000000)
	if _, err := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(t.Context(),
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cp.GrantListWatch(t.Context(), "ops-cm-reader", cmOnlyUser, "", "configmaps"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := cmOnlyKubeconfig(t)
	cfg := writeConfig(t, dir, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
server: {address: "127.0.0.1:0"}
actions: [{name: out, log: {}}]
rules:
  - {name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [out]}
  - {name: secrets, resources: [{group: "", resource: secrets}], namespaces: [%[1]s], actions: [out]}
`, ns))
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", kubeconfig)
	base := "http://" + servedAddr(p)
	if code, body := get(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	testenv.WaitFor(t, "the configmaps watch to sync", 30*time.Second, func() bool {
		_, body := get(t, base+"/readyz")
		return strings.HasPrefix(body, "ok")
	})
	if _, err := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns).Create(t.Context(),
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c1"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var metrics string
	testenv.WaitFor(t, "the delivery to be counted", 20*time.Second, func() bool {
		_, metrics = get(t, base+"/metrics")
		return strings.Contains(metrics, `dynwatch_deliveries_total{action="out",result="ok"} 1`)
	})
	// A scrape gathers its collectors concurrently, so the one that saw the
	// delivery may have read the event counters just before the event: every
	// counter is bumped before the delivery ends, so a scrape begun now has all.
	_, metrics = get(t, base+"/metrics")
	var ours []string
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, "dynwatch_") && !strings.Contains(l, "_bucket{") {
			ours = append(ours, l)
		}
	}
	t.Logf("dynwatch series:\n%s", strings.Join(ours, "\n"))
	for _, want := range []string{
		`dynwatch_events_total{resource="configmaps",type="add"} 1`,
		`dynwatch_rule_matches_total{rule="cms"} 1`,
		`dynwatch_rule_eval_seconds_count 1`,
		`dynwatch_rule_eval_seconds_bucket{le="2.5e-07"}`,
		`dynwatch_queue_depth{action="out"} 0`,
		fmt.Sprintf(`dynwatch_informer_synced{namespace="%s",resource="configmaps"} 1`, ns),
		fmt.Sprintf(`dynwatch_informer_synced{namespace="%s",resource="secrets"} 0`, ns),
		fmt.Sprintf(`dynwatch_watch_last_event_timestamp_seconds{namespace="%s",resource="configmaps"}`, ns),
		`dynwatch_config_reloads_total{result="ok"} 0`,
		`dynwatch_leader 1`,
		buildInfoSeries(t),
		"go_goroutines", "process_resident_memory_bytes",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, `name="c1"`) || strings.Contains(metrics, `"c1"`) {
		t.Error("an object name is a label value")
	}
	code, body := get(t, base+"/readyz")
	t.Logf("/readyz with a forbidden resource: %d\n%s", code, body)
	if code != http.StatusOK || !strings.Contains(body, "degraded: secrets.v1 in namespace "+ns+": Forbidden\n") ||
		strings.Contains(body, cmOnlyUser) || strings.Contains(body, "cannot list") {
		t.Errorf("/readyz: %d %q", code, body)
	}
	p.stopOK(syscall.SIGTERM)

	// A watch that sees no event nor bookmark for stallAfter makes /readyz fail,
	// saying which.
	stalled := writeConfig(t, t.TempDir(), fmt.Sprintf("apiVersion: dynwatch/v1alpha1\nserver: {address: \"127.0.0.1:0\", stallAfter: 1s}\nactions: [{name: out, log: {}}]\nrules: [{name: cms, resources: [{group: \"\", resource: configmaps}], namespaces: [%s], actions: [out]}]\n", ns))
	p2 := startProc(t, "run", "--config", stalled, "--kubeconfig", cp.Kubeconfig)
	stallAddr := servedAddr(p2)
	p2.waitLog("all informers synced", 30*time.Second)
	testenv.WaitFor(t, "/readyz to report the stalled watch", 20*time.Second, func() bool {
		code, body := get(t, "http://"+stallAddr+"/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "not ready: configmaps.v1 in namespace "+ns+": no event or bookmark for")
	})
	p2.stopOK(syscall.SIGTERM)

	// The port is taken: a clear error at start, exit 1.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := writeConfig(t, t.TempDir(), fmt.Sprintf("apiVersion: dynwatch/v1alpha1\nserver: {address: %q}\nactions: [{name: out, log: {}}]\nrules: [{name: cms, resources: [{kind: ConfigMap}], actions: [out]}]\n", ln.Addr().String()))
	code2, _, stderr := runCLI(t, "run", "--config", busy, "--kubeconfig", cp.Kubeconfig)
	if code2 != exitFailure || !strings.Contains(stderr, "address already in use") || !strings.Contains(stderr, "is another process using that port?") {
		t.Errorf("busy port: exit %d, stderr %s", code2, stderr)
	}
}

// buildInfoSeries is the dynwatch_build_info series that the binary must
// serve: the version and commit its `version` command prints.
func buildInfoSeries(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(bin, "version").Output()
	m := regexp.MustCompile(`^dynwatch (\S+)\ncommit: (\S+)\ngo: (\S+)\n`).FindStringSubmatch(string(out))
	if err != nil || m == nil {
		t.Fatalf("dynwatch version: %v\n%s", err, out)
	}
	return fmt.Sprintf(`dynwatch_build_info{commit=%q,goversion=%q,version=%q} 1`, m[2], m[3], m[1])
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/event"
)

// createHealthGadgets makes, in ns, a Gadget per health (Gadgets have no
// status subresource: the status is written with the object): stalled
// (Failed), notready (InProgress), plain (Current), and custom, whose phase
// the config's own health of Gadget reads when one is given.
func createHealthGadgets(t *testing.T, d dynamic.Interface, ns string) {
	t.Helper()
	for name, status := range map[string]map[string]any{
		"stalled":  {"conditions": []any{map[string]any{"type": "Stalled", "status": "True", "reason": "Quota", "message": "out of quota"}}},
		"notready": {"conditions": []any{map[string]any{"type": "Ready", "status": "False", "message": "warming up"}}},
		"plain":    nil,
	} {
		g := gadget(ns, name, map[string]any{"n": int64(1)})
		if status != nil {
			g.Object["status"] = status
		}
		if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), g, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func writeHealthConfig(t *testing.T, ns, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "health.yaml")
	cfg := `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - name: gadgets
    resources: [{group: tail.example.com, resource: gadgets}]
    namespaces: [` + ns + `]
    actions: [out]
` + extra
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// audit prints each match's health (HEALTH, "health"), computed from the
// objects as the API server returns them, and --health keeps the statuses
// named; a misspelt status is a usage error with the nearest one.
func TestAuditHealth(t *testing.T) {
	d, ns := setupTail(t)
	createHealthGadgets(t, d, ns)
	path := writeHealthConfig(t, ns, "")

	code, stdout, stderr := runCLI(t, "audit", path, "--kubeconfig", cp.Kubeconfig, "-o", "json", "--health", "Failed,inprogress")
	if code != exitFailure {
		t.Fatalf("exit %d, want 1; stderr %s", code, stderr)
	}
	got := map[string]event.Health{}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var p event.Payload
		if err := json.Unmarshal([]byte(l), &p); err != nil || p.Health == nil {
			t.Fatalf("not a payload with health: %s (%v)", l, err)
		}
		got[p.Name] = *p.Health
	}
	want := map[string]event.Health{"stalled": {Status: "Failed", Message: "out of quota"}, "notready": {Status: "InProgress", Message: "warming up"}}
	if len(got) != len(want) || got["stalled"] != want["stalled"] || got["notready"] != want["notready"] {
		t.Errorf("audit --health Failed,InProgress = %v, want %v", got, want)
	}

	code, stdout, stderr = runCLI(t, "audit", path, "--kubeconfig", cp.Kubeconfig)
	if code != exitFailure {
		t.Fatalf("table: exit %d, want 1; stderr %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "HEALTH") {
		t.Fatalf("table = %q, want a header with HEALTH and the three gadgets", stdout)
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		want := map[string]string{"stalled": "Failed", "notready": "InProgress", "plain": "Current"}[f[3]]
		if len(f) < 5 || f[4] != want {
			t.Errorf("row %q: want health %s", l, want)
		}
	}

	code, _, stderr = runCLI(t, "audit", path, "--kubeconfig", cp.Kubeconfig, "--health", "Faild")
	if code != exitUsage || !strings.Contains(stderr, `unknown health status "Faild", did you mean "Failed"?`) {
		t.Errorf("--health Faild: exit %d, stderr %q; want 2 and a did you mean", code, stderr)
	}

	// A kind's own health in the config takes precedence over kstatus'.
	path = writeHealthConfig(t, ns, `health:
  - group: tail.example.com
    kind: Gadget
    cel: 'has(object.status) ? {"status": "Current", "message": ""} : {"status": "Failed", "message": "no status"}'
`)
	code, stdout, stderr = runCLI(t, "audit", path, "--kubeconfig", cp.Kubeconfig, "-o", "json", "--health", "Failed")
	if code != exitFailure || strings.Count(stdout, "\n") != 1 || !strings.Contains(stdout, `"name":"plain"`) ||
		!strings.Contains(stdout, `"health":{"status":"Failed","message":"no status"}`) {
		t.Errorf("with Gadget's own health: exit %d, stdout %s, stderr %s; want plain alone, Failed", code, stdout, stderr)
	}
}

// tail --health shows only what is not Current, and a health column reads it.
func TestTailHealth(t *testing.T) {
	d, ns := setupTail(t)
	createHealthGadgets(t, d, ns)
	out, stderr, stop := background(t, "tail", "gadgets", "-n", ns, "--kubeconfig", cp.Kubeconfig, "--health",
		"--columns", "health=health.status,why=health.message", "-o", "json")
	waitOutput(t, out, "the two unhealthy gadgets", func(s string) bool { return strings.Count(s, "\n") >= 2 })
	// An object that turns unhealthy later is shown too.
	g := gadget(ns, "later", nil)
	g.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Reconciling", "status": "True", "message": "on it"}}}
	if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), g, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, out, "the later gadget", func(s string) bool { return strings.Count(s, "\n") >= 3 })
	time.Sleep(300 * time.Millisecond)
	if code := stop(); code != exitOK {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var p event.Payload
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatalf("not a payload: %s", l)
		}
		got[p.Name] = string(p.Fields["health"]) + " " + string(p.Fields["why"])
	}
	want := map[string]string{"stalled": `"Failed" "out of quota"`, "notready": `"InProgress" "warming up"`, "later": `"InProgress" "on it"`}
	if len(got) != len(want) {
		t.Fatalf("tail --health printed %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
}

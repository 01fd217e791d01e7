package main

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A condition's message that quotes a value the config redacts reaches
// neither audit -o json's "health" nor tail's health.message column (nor
// its -o json) in clear, on objects as the API server returns them.
func TestHealthMessageRedactedInAuditAndTail(t *testing.T) {
	const secret = "SENTINEL-pw-77c1"
	d, ns := setupTail(t)
	g := gadget(ns, "leaky", map[string]any{"n": int64(1)})
	g.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Stalled", "status": "True", "reason": "BadPassword", "message": "password " + secret + " rejected"}}}
	if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), g, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := writeHealthConfig(t, ns, `redact: [{group: tail.example.com, kind: Gadget, paths: [status.conditions]}]
`)
	code, stdout, stderr := runCLI(t, "audit", path, "--kubeconfig", cp.Kubeconfig, "-o", "json", "--health", "Failed")
	if code != exitFailure || !strings.Contains(stdout, `"health":{"status":"Failed"`) {
		t.Fatalf("audit: exit %d, stdout %s, stderr %s; want 1 and the leaky gadget Failed", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, secret) {
		t.Errorf("audit -o json shows the redacted value: %s", stdout)
	}

	out, errOut, stop := background(t, "tail", "gadgets", "-n", ns, "--kubeconfig", cp.Kubeconfig, "--config", path, "--health",
		"--columns", "why=health.message", "-o", "json")
	waitOutput(t, out, "the leaky gadget", func(s string) bool { return strings.Contains(s, `"name":"leaky"`) })
	time.Sleep(300 * time.Millisecond)
	if code := stop(); code != exitOK {
		t.Errorf("tail exit %d: %s", code, errOut.String())
	}
	if strings.Contains(out.String()+errOut.String(), secret) {
		t.Errorf("tail shows the redacted value: %s", out.String())
	}
}

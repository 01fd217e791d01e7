package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A proxy from the environment that applies to a webhook is logged at start,
// by its host only (not its credentials, nor the webhook's URL); a webhook
// NO_PROXY exempts is not.
func TestRunLogsTheWebhookProxy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `apiVersion: dynwatch/v1alpha1
actions:
  - {name: proxied, webhook: {url: "https://hooks.example.invalid/services/T0KEN"}}
  - {name: direct, webhook: {url: "https://internal.example.invalid/hook"}}
rules: [{name: r, resources: [{group: "", resource: configmaps}], actions: [proxied, direct]}]
`)
	cmd := exec.Command(bin, "run", "--config", cfg, "--kubeconfig", filepath.Join(dir, "missing"))
	cmd.Env = append(os.Environ(), "HTTPS_PROXY=http://user:s3cret@proxy.example.invalid:3128", "NO_PROXY=internal.example.invalid")
	out, _ := cmd.CombinedOutput()
	logs := string(out)
	if !strings.Contains(logs, "webhook deliveries go through a proxy") || !strings.Contains(logs, "action=proxied proxy=proxy.example.invalid:3128") {
		t.Errorf("the proxy is not logged:\n%s", logs)
	}
	for _, leak := range []string{"s3cret", "T0KEN", "action=direct"} {
		if strings.Contains(logs, leak) {
			t.Errorf("the logs hold %q:\n%s", leak, logs)
		}
	}
}

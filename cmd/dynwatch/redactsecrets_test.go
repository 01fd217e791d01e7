package main

import (
	"strings"
	"testing"
)

// check says when a file drops the built-in Secret redaction, and a redact
// list alone does not: Secrets stay redacted in test's payload.
func TestCheckWarnsWhenSecretsAreNotRedacted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const head = "apiVersion: dynwatch/v1alpha1\nactions: [{name: out, log: {}}]\nrules: [{name: r, resources: [{group: \"\", resource: secrets}], actions: [out]}]\n"
	cfg := writeConfig(t, dir, head+"redact: [{kind: ConfigMap, paths: [data.token]}]\n")
	code, stdout, stderr := runCLI(t, "check", "--config", cfg)
	if code != exitOK || stderr != "" {
		t.Errorf("a redact list: exit %d, stderr %q", code, stderr)
	}
	code, stdout, _ = runCLI(t, "test", "--config", cfg, "--rule", "r", "--new", "testdata/secret-new.yaml")
	if code != exitOK || !strings.Contains(stdout, `<redacted>`) {
		t.Errorf("a redact list let a Secret through: exit %d\n%s", code, stdout)
	}
	cfg = writeConfig(t, dir, head+"redactSecrets: false\n")
	code, _, stderr = runCLI(t, "check", "--config", cfg)
	if code != exitOK || !strings.Contains(stderr, "config.yaml:4: redactSecrets: warning: false drops the built-in Secret redaction") {
		t.Errorf("redactSecrets: false: exit %d, stderr %q", code, stderr)
	}
}

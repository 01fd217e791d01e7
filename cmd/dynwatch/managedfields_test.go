package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `dynwatch test` cuts managedFields as run does: neither the payload nor a
// rule sees them.
func TestTestCutsManagedFields(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - name: cms
    resources: [{group: "", resource: configmaps}]
    when: [{path: metadata.managedFields, op: notExists}]
    actions: [out]
`)
	obj := filepath.Join(dir, "cm.yaml")
	if err := os.WriteFile(obj, []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  namespace: ns
  annotations: {note: kept}
  managedFields:
    - manager: kubectl
      operation: Apply
      fieldsV1: {f:data: {f:k: {}}}
data: {k: v}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "test", "--config", cfg, "--rule", "cms", "--new", obj)
	if code != exitOK {
		t.Fatalf("exit %d (the rule saw managedFields?)\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stdout, "managedFields") || strings.Contains(stdout, "kubectl") {
		t.Errorf("the payload holds managedFields:\n%s", stdout)
	}
	for _, want := range []string{`"note": "kept"`, `"k": "v"`, `"name": "c"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the payload lacks %s:\n%s", want, stdout)
		}
	}
}

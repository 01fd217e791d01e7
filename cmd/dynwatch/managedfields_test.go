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

// `dynwatch test --old --new` reads the update's actor from the objects'
// managedFields, as run does: a rule reads actor.manager and the payload
// carries the actor.
func TestTestActorFromManagedFields(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - name: by-hand
    resources: [{group: "", resource: configmaps}]
    when: [{path: actor.manager, op: eq, value: kubectl-patch}]
    actions: [out]
`)
	write := func(name, rv, data, managed string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  namespace: ns
  uid: u
  resourceVersion: "`+rv+`"
  managedFields:
`+managed+`data: {k: `+data+`}
`), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	creator := "    - {manager: creator, operation: Update, time: \"2026-12-01T10:00:00Z\", fieldsType: FieldsV1, fieldsV1: {f:data: {f:k: {}}}}\n"
	patcher := "    - {manager: kubectl-patch, operation: Update, time: \"2026-12-01T10:00:09Z\", fieldsType: FieldsV1, fieldsV1: {f:data: {f:k: {}}}}\n"
	code, stdout, stderr := runCLI(t, "test", "--config", cfg, "--rule", "by-hand", "--old", write("old.yaml", "1", "a", creator), "--new", write("new.yaml", "2", "b", patcher))
	if code != exitOK {
		t.Fatalf("exit %d: the rule did not fire on kubectl-patch's update\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, `"manager": "kubectl-patch"`) || !strings.Contains(stdout, `"time": "2026-12-01T10:00:09Z"`) {
		t.Errorf("the payload lacks the actor:\n%s", stdout)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// test --explain writes each step on one terminal line: a value holding a C1
// control character (U+009B, CSI) that JSON leaves as it is is written with a
// \u escape, as tail's table does.
func TestExplainWritesNoControlCharacter(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	obj := filepath.Join(dir, "cm.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: dynwatch/v1alpha1\nactions: [{name: out, log: {}}]\n"+
		"rules: [{name: r, resources: [{kind: ConfigMap}], when: [{path: metadata.annotations.note, op: exists}], changed: [metadata.annotations.note], actions: [out]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(obj, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns, annotations: {note: \"a\\u009b2J\\u0085b\"}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stdout, stderr := runCLI(t, "test", "--config", cfg, "--rule", "r", "--new", obj, "--explain")
	var steps []string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "when[") || strings.HasPrefix(l, "changed") {
			steps = append(steps, l)
		}
	}
	if len(steps) != 2 {
		t.Fatalf("want the when and changed steps:\n%s%s", stdout, stderr)
	}
	for _, l := range steps {
		if strings.ContainsAny(l, "\u009b\u0085") || !strings.Contains(l, `"a\u009b2J\u0085b"`) && strings.HasPrefix(l, "when[") {
			t.Errorf("step %q: want the value with \\u escapes", l)
		}
	}
}

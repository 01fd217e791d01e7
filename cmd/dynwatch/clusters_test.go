package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// clustersFile writes a config whose clusters a and b both reach the test
// control plane (two kubeconfigs, as two clusters would have) and, with
// gone, one whose kubeconfig names a server nobody listens on.
func clustersFile(t *testing.T, ns string, gone bool) string {
	t.Helper()
	dir := t.TempDir()
	kc, err := os.ReadFile(cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, name+".kubeconfig"), kc, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	clusters := fmt.Sprintf("  - {name: a, kubeconfig: %s}\n  - {name: b, kubeconfig: %s}\n", filepath.Join(dir, "a.kubeconfig"), filepath.Join(dir, "b.kubeconfig"))
	if gone {
		if err := os.WriteFile(filepath.Join(dir, "gone.kubeconfig"), []byte(strings.ReplaceAll(string(kc), cp.URL, "https://127.0.0.1:1")), 0o600); err != nil {
			t.Fatal(err)
		}
		clusters += fmt.Sprintf("  - {name: gone, kubeconfig: %s}\n", filepath.Join(dir, "gone.kubeconfig"))
	}
	path := filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
clusters:
%sactions: [{name: out, log: {}}]
rules:
  - {name: cms, namespaces: [%[2]s], resources: [{group: "", resource: configmaps}], actions: [out]}
  - {name: b-only, clusters: [b], namespaces: [%[2]s], resources: [{group: "", resource: configmaps}], actions: [out]}
`, clusters, ns)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func clustersNamespace(t *testing.T) (dynamic.Interface, string) {
	t.Helper()
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := fmt.Sprintf("clusters-%d", time.Now().UnixNano()%1000000)
	if _, err := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(t.Context(),
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return d, ns
}

var cmResource = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// tail --cluster all follows every cluster of the config in one table with
// a CLUSTER column; --cluster NAME follows that one.
func TestTailClusters(t *testing.T) {
	d, ns := clustersNamespace(t)
	path := clustersFile(t, ns, false)
	all, allErr, stopAll := background(t, "tail", "-v", "configmaps", "-n", ns, "--kubeconfig", cp.Kubeconfig, "--config", path, "--cluster", "all")
	justB, bErr, stopB := background(t, "tail", "-v", "configmaps", "-n", ns, "--kubeconfig", cp.Kubeconfig, "--config", path, "--cluster", "b", "-o", "json")
	waitOutput(t, allErr, "both clusters listed", func(s string) bool { return strings.Count(s, "msg=following") == 2 })
	waitOutput(t, bErr, "b listed", func(s string) bool { return strings.Contains(s, "msg=following") })
	if _, err := d.Resource(cmResource).Namespace(ns).Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out := waitOutput(t, all, "a row per cluster", func(s string) bool { return strings.Count(s, " x ") == 2 })
	waitOutput(t, justB, "b's payload", func(s string) bool { return strings.Contains(s, `"cluster":"b"`) })
	stopAll()
	stopB()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "CLUSTER") {
		t.Errorf("no CLUSTER column:\n%s", out)
	}
	for _, c := range []string{"a ", "b "} {
		if !strings.Contains(out, "\n"+c) {
			t.Errorf("no row of cluster %s:\n%s", c, out)
		}
	}
	if s := justB.String(); strings.Contains(s, `"cluster":"a"`) {
		t.Errorf("--cluster b printed a's events:\n%s", s)
	}
	if code, _, stderr := runCLI(t, "tail", "configmaps", "--cluster", "nope", "--config", path); code != exitUsage || !strings.Contains(stderr, "no such cluster") {
		t.Errorf("--cluster nope: exit %d, %s", code, stderr)
	}
}

// audit audits each cluster with its rules, in a table with a CLUSTER
// column; check --cluster checks each cluster in a section of its own, and a
// cluster that cannot be reached fails the check without stopping the others.
func TestAuditAndCheckClusters(t *testing.T) {
	d, ns := clustersNamespace(t)
	if _, err := d.Resource(cmResource).Namespace(ns).Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := clustersFile(t, ns, false)
	code, stdout, stderr := runCLI(t, "audit", "--config", path, "--kubeconfig", cp.Kubeconfig)
	if code != exitFailure {
		t.Fatalf("audit: exit %d, %s", code, stderr)
	}
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		f := strings.Fields(l)
		rows = append(rows, strings.Join(f[:2], " "))
	}
	if want := []string{"CLUSTER RULE", "a cms", "b b-only", "b cms"}; !slices.Equal(rows, want) {
		t.Errorf("audit rows %v, want %v:\n%s", rows, want, stdout)
	}
	code, stdout, stderr = runCLI(t, "check", "--cluster", "--config", clustersFile(t, ns, true), "--kubeconfig", cp.Kubeconfig)
	if code != exitFailure || !strings.Contains(stderr, "cluster gone") {
		t.Errorf("check with gone: exit %d, stderr %s", code, stderr)
	}
	for _, want := range []string{"cluster a:", "cluster b:", "cluster gone:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("check lacks %q:\n%s", want, stdout)
		}
	}
	if code, _, stderr := runCLI(t, "check", "--cluster", "--config", path, "--kubeconfig", cp.Kubeconfig); code != exitOK {
		t.Errorf("check of reachable clusters: exit %d, %s", code, stderr)
	}
}

package main

import (
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// tail --config FILE redacts what the file's redact list names, as run, audit
// and test do: a ConfigMap path declared secret never reaches the table, a
// --columns column or a JSON payload, with or without --cluster.
func TestTailRedactsTheConfigsPaths(t *testing.T) {
	d, ns := clustersNamespace(t)
	const marker = "TAIL-REDACT-MARKER-7f3a"
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules: [{name: r, resources: [{group: "", resource: configmaps}], actions: [out]}]
redact: [{kind: ConfigMap, paths: [data.token]}]
`)
	clusters := clustersFile(t, ns, false)
	raw, err := os.ReadFile(clusters)
	if err != nil {
		t.Fatal(err)
	}
	redactClusters := strings.Replace(string(raw), "actions:", "redact: [{kind: ConfigMap, paths: [data.token]}]\nactions:", 1)
	clustersCfg := writeConfig(t, t.TempDir(), redactClusters)
	base := []string{"tail", "-v", "configmaps", "-n", ns, "--kubeconfig", cp.Kubeconfig}
	cases := []struct {
		name string
		args []string
	}{
		{"table", []string{"--config", cfg}},
		{"columns", []string{"--config", cfg, "--columns", "tok=data.token,plain=data.plain"}},
		{"wide columns", []string{"--config", cfg, "-o", "wide", "--columns", "tok=data.token"}},
		{"json", []string{"--config", cfg, "-o", "json"}},
		{"json columns", []string{"--config", cfg, "-o", "json", "--columns", "tok=data.token"}},
		{"yaml", []string{"--config", cfg, "-o", "yaml"}},
		{"cluster columns", []string{"--config", clustersCfg, "--cluster", "a", "--columns", "tok=data.token"}},
		{"cluster json", []string{"--config", clustersCfg, "--cluster", "all", "-o", "json"}},
	}
	type tailed struct {
		name       string
		out, errs  *testenv.Buffer
		stop       func() int
		wantRedact bool
	}
	var tails []tailed
	for _, c := range cases {
		out, errs, stop := background(t, append(append([]string{}, base...), c.args...)...)
		wantRedact := c.name != "table" // the plain table shows no values
		tails = append(tails, tailed{c.name, out, errs, stop, wantRedact})
		waitOutput(t, errs, c.name+": the informers to list", func(s string) bool { return strings.Contains(s, "msg=following") })
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "secretive"}, "data": map[string]any{"token": marker, "plain": "visible-value"}}}
	created, err := d.Resource(cmResource).Namespace(ns).Create(t.Context(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// An update too: its old object, and the table's CHANGED column.
	if err := unstructured.SetNestedField(created.Object, marker+"-2", "data", "token"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Resource(cmResource).Namespace(ns).Update(t.Context(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tl := range tails {
		waitOutput(t, tl.out, tl.name+": the update", func(s string) bool { return strings.Contains(s, "update") })
	}
	for _, tl := range tails {
		if code := tl.stop(); code != exitOK {
			t.Errorf("%s: exit %d: %s", tl.name, code, tl.errs)
		}
		out := tl.out.String()
		if strings.Contains(out, marker) || strings.Contains(tl.errs.String(), marker) {
			t.Errorf("%s: the redacted value is printed:\n%s\nstderr:\n%s", tl.name, out, tl.errs)
		}
		if tl.wantRedact && !strings.Contains(out, "<redacted>") {
			t.Errorf("%s: no <redacted> in the output:\n%s", tl.name, out)
		}
	}
}

package main

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// An alert that opens and resolves: a fire: edges rule (CEL, ready replicas
// below desired) sends enter, then exit, as a Deployment's status goes bad and
// recovers; a recovery while dynwatch was down is replayed as exit.
func TestEdgesOnDeploymentStatus(t *testing.T) {
	_, ns := setupTail(t)
	d := dynamic.NewForConfigOrDie(cp.Config)
	deploys := d.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(ns)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions: [{name: out, log: {}}]
rules:
  - name: unavailable
    resources: [{group: apps, resource: deployments}]
    namespaces: [%s]
    fire: edges
    when:
      - cel: "object.spec.replicas > (has(object.status.readyReplicas) ? object.status.readyReplicas : 0)"
    actions: [out]
`, filepath.Join(dir, "state.db"), ns))
	setReady := func(n int64) {
		t.Helper()
		u, err := deploys.Get(t.Context(), "api", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(u.Object, n, "status", "readyReplicas")
		_ = unstructured.SetNestedField(u.Object, int64(2), "status", "replicas")
		if _, err := deploys.UpdateStatus(t.Context(), u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	transitions := func(p *proc, n int) []string {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for len(p.payloads()) < n && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		var out []string
		for _, pl := range p.payloads() {
			s := string(pl.Type) + ":" + pl.Transition
			if pl.Replay {
				s += ":replay"
			}
			out = append(out, s)
		}
		return out
	}
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	p.waitLog("state: baseline recorded", 30*time.Second)
	labels := map[string]any{"app": "api"}
	if _, err := deploys.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "api"},
		"spec": map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	transitions(p, 1)
	setReady(2) // recovers
	transitions(p, 2)
	setReady(1) // goes bad
	got := transitions(p, 3)
	p.stopOK(syscall.SIGTERM)
	if want := "[add:enter update:exit update:enter]"; fmt.Sprint(got) != want {
		t.Errorf("live transitions %v, want %s", got, want)
	}
	setReady(2) // recovers while dynwatch is down
	q := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	q.waitLog("state: compared with the records", 30*time.Second)
	got = transitions(q, 1)
	q.stopOK(syscall.SIGTERM)
	if want := "[update:exit:replay]"; fmt.Sprint(got) != want {
		t.Errorf("after the restart %v, want %s", got, want)
	}
}

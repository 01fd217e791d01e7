package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// docBlocks returns the code blocks of lang in the docs page docs/NAME.
func docBlocks(t *testing.T, name, lang string) []string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile("(?s)```"+lang+"\n(.*?)```").FindAllStringSubmatch(string(raw), -1) {
		out = append(out, m[1])
	}
	if len(out) == 0 {
		t.Fatalf("docs/%s has no %s block", name, lang)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The Less noise page's example (docs/noise.md), run: two Deployments of its
// namespace lose ready replicas, and the receiver gets one delivery of the
// shape the page shows (the same keys, at every level it shows).
func TestDocsLessNoise(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := testenv.Namespace(t, d)
	example := docBlocks(t, "noise.md", "yaml")[0]
	var shown map[string]any
	if err := json.Unmarshal([]byte(docBlocks(t, "noise.md", "json")[0]), &shown); err != nil {
		t.Fatal(err)
	}
	// The example as written, but for its namespace and a wait a test can sit out.
	cfgText := strings.Replace(strings.Replace(example, "namespaces: [prod]", "namespaces: ["+ns+"]", 1), "wait: 30s", "wait: 3s", 1)
	if cfgText == example {
		t.Fatal("the example's namespace or wait moved: update this test")
	}
	ri := d.Resource(deploymentsGVR).Namespace(ns)
	for _, name := range []string{"api", "web"} {
		dep := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{"replicas": int64(3), "selector": map[string]any{"matchLabels": map[string]any{"app": name}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "x"}}}}},
		}}
		u, err := ri.Create(t.Context(), dep, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		setReady(t, ri, u.GetName(), 3) // all ready before dynwatch starts: not "in"
	}
	recv := newGroupReceiver(t)
	cfg := writeConfig(t, t.TempDir(), cfgText)
	p := startProcWith(t, func(c *exec.Cmd) { c.Env = append(os.Environ(), "CHAT_URL="+recv.srv.URL) },
		"run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	p.waitLog("all informers synced", 30*time.Second)
	setReady(t, ri, "api", 1)
	setReady(t, ri, "web", 0)
	waitUntil(t, "the group's delivery", 30*time.Second, func() bool { return len(recv.deliveries()) > 0 }, p.stderr.String)
	time.Sleep(time.Second)
	p.stopOK(syscall.SIGTERM)
	got := recv.deliveries()
	if len(got) != 1 {
		t.Fatalf("%d deliveries, want one", len(got))
	}
	var sent map[string]any
	if err := json.Unmarshal(got[0].raw, &sent); err != nil {
		t.Fatal(err)
	}
	if g, w := sortedKeys(sent), sortedKeys(shown); !slices.Equal(g, w) {
		t.Errorf("top-level keys %v, the page shows %v", g, w)
	}
	if g, w := sortedKeys(sent["group"].(map[string]any)), sortedKeys(shown["group"].(map[string]any)); !slices.Equal(g, w) {
		t.Errorf("group labels %v, the page shows %v", g, w)
	}
	if got[0].body.Count != 2 {
		t.Fatalf("count %d, want 2", got[0].body.Count)
	}
	shownEvent := shown["events"].([]any)[0].(map[string]any)
	for i, e := range got[0].body.Events {
		ev := sent["events"].([]any)[i].(map[string]any)
		if g, w := sortedKeys(ev), sortedKeys(shownEvent); !slices.Equal(g, w) {
			t.Errorf("event %d keys %v, the page shows %v", i, g, w)
		}
		if e.Transition != "enter" || !slices.Equal(e.Changed, []string{"status.readyReplicas"}) || e.Namespace != ns {
			t.Errorf("event %d: transition %q, changed %v, namespace %s", i, e.Transition, e.Changed, e.Namespace)
		}
	}
	if g := got[0].body.Group; g["rule"] != "deployment-unavailable" || g["namespace"] != ns {
		t.Errorf("group %v", g)
	}
}

// setReady sets a Deployment's status.readyReplicas, as its controller would.
func setReady(t *testing.T, ri dynamic.ResourceInterface, name string, n int64) {
	t.Helper()
	u, err := ri.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, n, "status", "readyReplicas")
	_ = unstructured.SetNestedField(u.Object, int64(3), "status", "replicas")
	if _, err := ri.UpdateStatus(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

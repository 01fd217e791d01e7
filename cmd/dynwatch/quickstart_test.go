package main

import (
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// The README's quick start, as a newcomer runs it: its rule file passes
// check, and run against a cluster where the ConfigMap already exists with
// mode off (the tail step left it so) fires nothing at start, nothing when
// mode turns on, and one payload when it turns off again.
func TestReadmeQuickStart(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start := strings.Index(text, "\n## Quick start\n")
	if start < 0 {
		t.Fatal("the README has no Quick start")
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(text[start:])
	if m == nil {
		t.Fatal("the README's Quick start has no rule file")
	}
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := testenv.Namespace(t, d)
	rulesText := strings.Replace(m[1], "namespaces: [default]", "namespaces: ["+ns+"]", 1)
	if rulesText == m[1] {
		t.Fatal("the quick start's namespace moved: update this test")
	}
	cms := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "hello"}, "data": map[string]any{"mode": "off"}}}
	if _, err := cms.Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, t.TempDir(), rulesText)
	if code, stdout, stderr := runCLI(t, "check", "--config", cfg); code != exitOK || stderr != "" {
		t.Fatalf("check: exit %d\n%s%s", code, stdout, stderr)
	}
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	p.waitLog("all informers synced", 30*time.Second)
	setMode := func(mode string) {
		u, err := cms.Get(t.Context(), "hello", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(u.Object, mode, "data", "mode"); err != nil {
			t.Fatal(err)
		}
		if _, err := cms.Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setMode("on")
	setMode("off")
	waitUntil(t, "the quick start's payload", 30*time.Second, func() bool { return len(p.payloads()) > 0 }, p.stderr.String)
	time.Sleep(time.Second)
	p.stopOK(syscall.SIGTERM)
	got := p.payloads()
	if len(got) != 1 {
		t.Fatalf("%d payloads, want one (mode turning off):\n%+v", len(got), got)
	}
	if pl := got[0]; pl.Rule != "mode-off" || pl.Type != "update" || pl.Name != "hello" || string(pl.Fields["mode"]) != `"off"` {
		t.Errorf("payload: rule %s, %s of %s, fields %s", pl.Rule, pl.Type, pl.Name, pl.Fields["mode"])
	}
}

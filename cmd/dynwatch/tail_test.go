package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// background runs a command in process until stop, which sends SIGINT and
// returns the exit code.
func background(t *testing.T, args ...string) (out, errOut *testenv.Buffer, stop func() int) {
	t.Helper()
	out, errOut = &testenv.Buffer{}, &testenv.Buffer{}
	sigs := make(chan os.Signal, 1)
	code := make(chan int, 1)
	go func() {
		code <- cli(context.Background(), &env{stdin: strings.NewReader(""), stdout: out, stderr: errOut, signals: sigs}, args)
	}()
	stopped := false
	var result int
	stop = func() int {
		if !stopped {
			stopped = true
			sigs <- syscall.SIGINT
			select {
			case result = <-code:
			case <-time.After(30 * time.Second):
				t.Fatalf("%v did not stop", args)
			}
		}
		return result
	}
	t.Cleanup(func() { stop() })
	return out, errOut, stop
}

var gadgetGVR = schema.GroupVersionResource{Group: "tail.example.com", Version: "v1", Resource: "gadgets"}

func setupTail(t *testing.T) (dynamic.Interface, string) {
	t.Helper()
	d := dynamic.NewForConfigOrDie(cp.Config)
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets.tail.example.com"},
		"spec": map[string]any{
			"group": "tail.example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "shortNames": []any{"gd"}},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := d.Resource(crdGVR).Create(t.Context(), &unstructured.Unstructured{Object: crd}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("tail-%d", time.Now().UnixNano()%1000000)
	if _, err := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(t.Context(),
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := d.Resource(gadgetGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{}); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("gadgets not served: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return d, ns
}

func gadget(ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "tail.example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
}

func waitOutput(t *testing.T, out *testenv.Buffer, what string, cond func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond(out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; output:\n%s", what, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return out.String()
}

// tail follows a built-in resource and a CRD in one stream, whichever way the
// resources are named, and --where filters on numbers and strings.
func TestTailBuiltinAndCRD(t *testing.T) {
	d, ns := setupTail(t)
	cmGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	_, _ = d.Resource(cmGVR).Namespace(ns).Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "pre-existing"}, "data": map[string]any{"size": "9"}}}, metav1.CreateOptions{})

	for _, names := range []string{"configmaps,gadgets", "ConfigMap,Gadget", "cm,gd", "configmap,gadgets.tail.example.com"} {
		t.Run(names, func(t *testing.T) {
			out, stderr, stop := background(t, "tail", "-v", names, "-n", ns, "--kubeconfig", cp.Kubeconfig, "-o", "json", "--watch-only",
				"--where", "metadata.labels.pick == yes", "--columns", "size=spec.size,dsize=data.size")
			// With --watch-only, objects that exist before the informers have listed are not printed.
			waitOutput(t, stderr, "the informers to list", func(s string) bool { return strings.Contains(s, "msg=following") })
			suffix := strings.ReplaceAll(strings.ToLower(names), ",", "-")
			suffix = strings.ReplaceAll(suffix, ".", "-")
			labels := map[string]any{"pick": "yes"}
			if _, err := d.Resource(cmGVR).Namespace(ns).Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm-" + suffix, "labels": labels}, "data": map[string]any{"size": "3"}}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			g := gadget(ns, "gd-"+suffix, map[string]any{"size": int64(7)})
			g.SetLabels(map[string]string{"pick": "yes"})
			if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), g, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, "unlabelled-"+suffix, nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitOutput(t, out, "both events", func(s string) bool { return strings.Count(s, "\n") >= 2 })
			time.Sleep(500 * time.Millisecond)
			if code := stop(); code != exitOK {
				t.Errorf("exit %d: %s", code, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			got := map[string]event.Payload{}
			for _, l := range lines {
				var p event.Payload
				if err := json.Unmarshal([]byte(l), &p); err != nil {
					t.Fatalf("not a payload: %s", l)
				}
				got[p.Name] = p
			}
			if len(got) != 2 {
				t.Fatalf("got %d payloads, want the two labelled objects:\n%s", len(got), out.String())
			}
			cm, gd := got["cm-"+suffix], got["gd-"+suffix]
			if cm.Rule != "tail" || cm.Type != event.Add || cm.Resource.Resource != "configmaps" || string(cm.Fields["dsize"]) != `"3"` {
				t.Errorf("configmap payload = %+v", cm)
			}
			if gd.Resource.Group != "tail.example.com" || string(gd.Fields["size"]) != "7" {
				t.Errorf("gadget payload = %+v", gd)
			}
		})
	}
}

func TestTailWhereTyped(t *testing.T) {
	d, ns := setupTail(t)
	out, stderr, stop := background(t, "tail", "-v", "gadgets", "-n", ns, "--kubeconfig", cp.Kubeconfig,
		"--where", "spec.size > 5", "--where", "spec.tier =~ gold|silver", "--columns", "size=spec.size,tier=spec.tier")
	waitOutput(t, stderr, "the informers to list", func(s string) bool { return strings.Contains(s, "msg=following") })
	for name, spec := range map[string]map[string]any{
		"big-gold":       {"size": int64(7), "tier": "gold"},
		"big-bronze":     {"size": int64(9), "tier": "bronze"},
		"small-gold":     {"size": int64(5), "tier": "gold"},
		"string-size":    {"size": "huge", "tier": "gold"},
		"quantity-size":  {"size": "6", "tier": "silver"}, // a quantity string orders like a number
		"big-silverware": {"size": int64(8), "tier": "silverware"},
	} {
		if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, name, spec), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Created last, in the same watch: once it shows, every gadget before it was decided.
	if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, "sentinel", map[string]any{"size": int64(10), "tier": "gold"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, out, "big-gold, quantity-size and the sentinel", func(s string) bool {
		return strings.Contains(s, "big-gold") && strings.Contains(s, "quantity-size") && strings.Contains(s, "sentinel")
	})
	if code := stop(); code != exitOK {
		t.Errorf("tail exited %d on SIGINT, want 0", code)
	}
	s := out.String()
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if !strings.Contains(l, " sentinel ") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 3 {
		t.Fatalf("want the header, big-gold and quantity-size only:\n%s", s)
	}
	if !strings.Contains(lines[1], "big-gold") {
		lines[1], lines[2] = lines[2], lines[1]
	}
	fields := strings.Fields(lines[1])
	if want := []string{"add", "gadgets.tail.example.com", ns, "big-gold"}; strings.Join(fields[1:5], " ") != strings.Join(want, " ") ||
		fields[len(fields)-2] != "7" || fields[len(fields)-1] != "gold" {
		t.Errorf("row = %q", lines[1])
	}
	if h := strings.Fields(lines[0]); strings.Join(h, " ") != "TIME EVENT RESOURCE NAMESPACE NAME AGE CHANGED SIZE TIER" {
		t.Errorf("header = %q", lines[0])
	}
}

func TestTailUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"tail"}, "give the resources as one argument"},
		{[]string{"tail", "configmaps", "--where", "spec.replicas >"}, "--where: cannot read \"spec.replicas >\": want PATH > VALUE\nRun 'dynwatch tail --help' for usage.\n"},
		{[]string{"tail", "configmaps", "--where", "spec.x ~= 3"}, "did you mean 'spec.x =~ 3'?\nRun 'dynwatch tail --help' for usage.\n"},
		{[]string{"tail", "configmaps", "--where", "spec..x == 1"}, "empty component"},
		{[]string{"tail", "configmaps", "--where", "a =~ (x"}, "bad regular expression"},
		{[]string{"tail", "configmaps", "-n", "a", "-A"}, "exclude each other"},
		{[]string{"tail", "widgts", "--kubeconfig", cp.Kubeconfig}, `unknown resource "widgts"`},
		{[]string{"tail", "configmaps", "--initial", "--watch-only"}, "--initial and --watch-only exclude each other"},
		{[]string{"tail", "configmaps", "--columns", `WEB:{.spec.containers[?(@.name=="web")].image}`}, `in gjson: spec.containers.#(name=="web").image`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant 2 and %q", code, stderr, tt.want)
			}
			// The error, then one line pointing to --help: no paragraph of usage.
			if n := strings.Count(stderr, "\n"); n != 2 || !strings.HasSuffix(stderr, "Run 'dynwatch tail --help' for usage.\n") {
				t.Errorf("stderr has %d lines, want the error and the pointer to --help:\n%s", n, stderr)
			}
		})
	}
}

// Objects that exist at start are listed first, each once, as kubectl get -w
// lists them (--initial, which asked for it before, is still taken); with
// --watch-only they are not.
func TestTailListsFirst(t *testing.T) {
	d, ns := setupTail(t)
	if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, "existing", map[string]any{"size": int64(1)}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	byDefault, _, stopDefault := background(t, "tail", "-v", "gd", "-n", ns, "--kubeconfig", cp.Kubeconfig)
	with, _, stopWith := background(t, "tail", "-v", "gd", "-n", ns, "--kubeconfig", cp.Kubeconfig, "--initial")
	without, withoutErr, stopWithout := background(t, "tail", "-v", "gd", "-n", ns, "--kubeconfig", cp.Kubeconfig, "--watch-only")
	waitOutput(t, byDefault, "the existing object", func(s string) bool { return strings.Contains(s, "existing") })
	waitOutput(t, with, "the existing object", func(s string) bool { return strings.Contains(s, "existing") })
	waitOutput(t, withoutErr, "the informers to list", func(s string) bool { return strings.Contains(s, "msg=following") })
	time.Sleep(200 * time.Millisecond)
	stopDefault()
	stopWith()
	stopWithout()
	if s := without.String(); strings.Contains(s, "existing") || !strings.HasPrefix(s, "TIME") {
		t.Errorf("with --watch-only:\n%s", s)
	}
	if s := byDefault.String(); strings.Count(s, " existing ") != 1 || !strings.HasPrefix(s, "TIME") {
		t.Errorf("by default, want the header and the existing object once:\n%s", s)
	}
}

// -l filters by label; -A follows every namespace.
func TestTailLabelsAllNamespaces(t *testing.T) {
	d, ns := setupTail(t)
	_, other := setupTail(t)
	out, stderr, stop := background(t, "tail", "-v", "gadgets.tail.example.com", "-A", "-l", "team in (a,b),!skip", "--kubeconfig", cp.Kubeconfig)
	waitOutput(t, stderr, "the informers to list", func(s string) bool { return strings.Contains(s, "msg=following") })
	for _, o := range []struct {
		ns, name string
		labels   map[string]string
	}{
		{ns, "team-a", map[string]string{"team": "a"}},
		{other, "team-b-elsewhere", map[string]string{"team": "b"}},
		{ns, "team-c", map[string]string{"team": "c"}},
		{ns, "team-a-skipped", map[string]string{"team": "a", "skip": "yes"}},
		{ns, "team-a-sentinel", map[string]string{"team": "a"}}, // last, in the same watch
	} {
		g := gadget(o.ns, o.name, nil)
		g.SetLabels(o.labels)
		if _, err := d.Resource(gadgetGVR).Namespace(o.ns).Create(t.Context(), g, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitOutput(t, out, "both matching gadgets and the sentinel", func(s string) bool {
		return strings.Contains(s, " team-a ") && strings.Contains(s, "team-b-elsewhere") && strings.Contains(s, "team-a-sentinel")
	})
	if code := stop(); code != exitOK {
		t.Errorf("tail exited %d on SIGINT, want 0", code)
	}
	if s := out.String(); strings.Contains(s, "team-c") || strings.Contains(s, "skipped") || !strings.Contains(s, other) {
		t.Errorf("output:\n%s", s)
	}
}

// tail of a cluster-scoped resource says -n does not apply only when -n was
// given, and is quiet (no INFO lines) unless -v.
func TestTailQuietAndClusterScopedNote(t *testing.T) {
	quietOut, quietErr, stopQuiet := background(t, "tail", "ns", "--kubeconfig", cp.Kubeconfig)
	_, verboseErr, stopVerbose := background(t, "tail", "-v", "ns", "-n", "default", "--kubeconfig", cp.Kubeconfig)
	waitOutput(t, verboseErr, "the informers to list", func(s string) bool { return strings.Contains(s, "msg=following") })
	// The quiet tail has listed and follows too: it prints a namespace created now.
	name := fmt.Sprintf("quiet-%d", time.Now().UnixNano()%1000000)
	d := dynamic.NewForConfigOrDie(cp.Config)
	if _, err := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(t.Context(),
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, quietOut, "the quiet tail to print the new namespace", func(s string) bool { return strings.Contains(s, name) })
	if code := stopQuiet(); code != exitOK {
		t.Errorf("tail exited %d on SIGINT, want 0", code)
	}
	if code := stopVerbose(); code != exitOK {
		t.Errorf("tail exited %d on SIGINT, want 0", code)
	}
	if s := quietErr.String(); s != "" {
		t.Errorf("tail without -v printed on stderr:\n%s", s)
	}
	if !strings.Contains(verboseErr.String(), "namespaces is cluster-scoped; -n does not apply to it") {
		t.Errorf("with -n, no note:\n%s", verboseErr.String())
	}
}

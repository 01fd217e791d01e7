package main

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dynwatch/dynwatch/event"
)

// events, ev and Event name the core group's Event, as kubectl get resolves
// them although events.k8s.io serves events too; events.events.k8s.io and
// events.v1.events.k8s.io name the other. Each lists the Event that exists.
func TestTailNamesEventsAsKubectl(t *testing.T) {
	d, ns := setupTail(t)
	ev := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Event",
		"metadata":       map[string]any{"name": "an-event"},
		"involvedObject": map[string]any{"kind": "ConfigMap", "name": "x", "namespace": ns},
		"reason":         "Tested", "message": "listed by tail", "type": "Normal"}}
	if _, err := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "events"}).Namespace(ns).Create(t.Context(), ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, group := range map[string]string{"events": "", "ev": "", "Event": "", "event": "",
		"events.events.k8s.io": "events.k8s.io", "events.v1.events.k8s.io": "events.k8s.io", "ev.events.k8s.io": "events.k8s.io"} {
		t.Run(name, func(t *testing.T) {
			out, stderr, stop := background(t, "tail", name, "-n", ns, "--kubeconfig", cp.Kubeconfig, "-o", "json")
			waitOutput(t, out, "the listed Event", func(s string) bool {
				return strings.Contains(s, "an-event") || strings.Contains(stderr.String(), "dynwatch tail:")
			})
			if code := stop(); code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var p event.Payload
			if err := json.Unmarshal([]byte(strings.TrimSpace(out.String())), &p); err != nil {
				t.Fatalf("want one payload: %v\n%s", err, out)
			}
			if p.Resource.Group != group || p.Resource.Resource != "events" || p.Type != event.Add || p.Name != "an-event" {
				t.Errorf("%s resolves to %+v, want the events of group %q", name, p.Resource, group)
			}
		})
	}
}

// The listed objects and the header form one table, each column as wide as
// its widest cell, as kubectl get -w prints what exists.
func TestTailListedTableLinesUp(t *testing.T) {
	d, ns := setupTail(t)
	for _, name := range []string{"a", "a-gadget-with-a-name-longer-than-any-column-default"} {
		if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, name, map[string]any{"size": int64(len(name))}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, stop := background(t, "tail", "gadgets", "-n", ns, "--kubeconfig", cp.Kubeconfig, "--columns", "SIZE:.spec.size")
	s := waitOutput(t, out, "the header and both gadgets", func(s string) bool { return strings.Count(s, "\n") == 3 })
	if code := stop(); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	at := strings.Index(lines[0], "SIZE")
	for _, l := range lines[1:] {
		if len(l) <= at || l[at-1] != ' ' || l[at] == ' ' {
			t.Errorf("the SIZE column does not line up at %d:\n%s", at, s)
		}
	}
	long := "a-gadget-with-a-name-longer-than-any-column-default"
	for _, l := range lines[1:] {
		if strings.Contains(l, long) && (!strings.Contains(l, long+"   ") || !strings.HasSuffix(l, " 51")) {
			t.Errorf("want the long name padded by three spaces and SIZE from .spec.size:\n%s", s)
		}
	}
}

// --columns in kubectl's custom-columns form reads .spec.size; a column whose
// path no listed object has is said once, as a --where path is.
func TestTailColumnsAsKubectl(t *testing.T) {
	d, ns := setupTail(t)
	if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, "one", map[string]any{"size": int64(4)}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, stderr, stop := background(t, "tail", "gadgets", "-n", ns, "--kubeconfig", cp.Kubeconfig,
		"--columns", "SIZE:.spec.size,TIER:{.spec.tier}", "--where", ".spec.size > 3")
	waitOutput(t, stderr, "the warning", func(s string) bool { return strings.Contains(s, "level=WARN") })
	s := waitOutput(t, out, "the listed gadget", func(s string) bool { return strings.Contains(s, " one ") })
	if code := stop(); code != exitOK {
		t.Errorf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if f := strings.Fields(lines[len(lines)-1]); f[len(f)-2] != "4" || f[len(f)-1] != "<none>" {
		t.Errorf("row %q, want SIZE 4 and TIER <none>", lines[len(lines)-1])
	}
	want := `msg="--columns path is missing on every object listed: its column reads <none> until one has it" column=TIER path=spec.tier objects=1`
	if e := stderr.String(); strings.Count(e, want) != 1 || strings.Count(e, "level=WARN") != 1 {
		t.Errorf("stderr, want once %s:\n%s", want, e)
	}
}

// tail TYPE NAME of an object that does not exist says so in one line and
// exits 1, as kubectl get -w NAME does; with --watch-only it waits for it.
func TestTailObjectNotFound(t *testing.T) {
	_, ns := setupTail(t)
	code, stdout, stderr := runBin(t, "tail", "gadgets", "nosuch", "-n", ns, "--kubeconfig", cp.Kubeconfig)
	want := `dynwatch tail: gadgets.tail.example.com "nosuch" not found in namespace "` + ns + `" (--watch-only waits for it to appear)` + "\n"
	if code != exitFailure || stderr != want || strings.Contains(stdout, "nosuch") {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
	if code, _, stderr := runBin(t, "tail", "ns/no-such-namespace", "--kubeconfig", cp.Kubeconfig); code != exitFailure ||
		stderr != `dynwatch tail: namespaces "no-such-namespace" not found (--watch-only waits for it to appear)`+"\n" {
		t.Errorf("cluster-scoped: exit %d, stderr %q", code, stderr)
	}
	_, errOut, stop := background(t, "tail", "-v", "gadgets", "nosuch", "-n", ns, "--kubeconfig", cp.Kubeconfig, "--watch-only")
	waitOutput(t, errOut, "the informers to list", func(s string) bool { return strings.Contains(s, "msg=following") })
	if code := stop(); code != exitOK {
		t.Errorf("--watch-only: exit %d: %s", code, errOut)
	}
}

// tail TYPE NAME of an object that does not exist prints nothing on stdout,
// not even the table's header, as kubectl get -w NAME prints only its error.
func TestTailObjectNotFoundPrintsNoHeader(t *testing.T) {
	_, ns := setupTail(t)
	for _, args := range [][]string{{}, {"-o", "wide"}, {"--columns", "SIZE:.spec.size"}} {
		code, stdout, stderr := runBin(t, append([]string{"tail", "gadgets/nosuch", "-n", ns, "--kubeconfig", cp.Kubeconfig}, args...)...)
		if code != exitFailure || stdout != "" || !strings.Contains(stderr, `"nosuch" not found`) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 1, nothing on stdout and the error", args, code, stdout, stderr)
		}
	}
}

package main

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// tail --where actor.manager==kubectl-patch shows the changes kubectl patch
// made and no other's (nor an add, which has no actor); -o wide's ACTOR
// column names the manager.
func TestTailWhereActor(t *testing.T) {
	d, ns := setupTail(t)
	out, stderr, stop := background(t, "tail", "-v", "gadgets", "-n", ns, "--kubeconfig", cp.Kubeconfig, "-o", "wide",
		"--where", "actor.manager==kubectl-patch")
	waitOutput(t, stderr, "the informers to list", func(s string) bool { return strings.Contains(s, "msg=following") })
	gadgets := d.Resource(gadgetGVR).Namespace(ns)
	for _, name := range []string{"by-patch", "by-other", "sentinel"} {
		if _, err := gadgets.Create(t.Context(), gadget(ns, name, map[string]any{"size": int64(1)}), metav1.CreateOptions{FieldManager: "creator"}); err != nil {
			t.Fatal(err)
		}
	}
	patch := func(name, manager string) {
		if _, err := gadgets.Patch(t.Context(), name, types.MergePatchType, []byte(`{"spec":{"size":2}}`), metav1.PatchOptions{FieldManager: manager}); err != nil {
			t.Fatal(err)
		}
	}
	patch("by-other", "kubectl-edit")
	patch("by-patch", "kubectl-patch")
	patch("sentinel", "kubectl-patch") // last, in the same watch: once it shows, the others were decided
	waitOutput(t, out, "the sentinel's update", func(s string) bool { return strings.Contains(s, " sentinel ") })
	if code := stop(); code != exitOK {
		t.Errorf("tail exited %d on SIGINT, want 0", code)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want the header and the two patches by kubectl-patch:\n%s", out.String())
	}
	if h := strings.Fields(lines[0]); h[len(h)-1] != "ACTOR" {
		t.Errorf("header = %q", lines[0])
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if f[1] != "update" || (f[4] != "by-patch" && f[4] != "sentinel") || f[len(f)-1] != "kubectl-patch" {
			t.Errorf("row = %q", l)
		}
	}
}

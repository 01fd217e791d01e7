package main

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A --where-cel expression over oldObject errs on every object of the
// initial list (adds have no old object), yet matches updates: tail does not
// warn that nothing can match it, and the update it selects is shown.
func TestTailDoesNotWarnAboutAnOldObjectFilter(t *testing.T) {
	t.Parallel()
	d, ns := setupTail(t)
	for _, name := range []string{"one", "two"} {
		if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, name, map[string]any{"size": int64(4)}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, stop := background(t, "tail", "gadgets", "-n", ns, "--kubeconfig", cp.Kubeconfig,
		"--where-cel", "oldObject.spec.size != object.spec.size", "--log-level", "info")
	waitOutput(t, stderr, "the initial list", func(s string) bool { return strings.Contains(s, `msg=following`) })
	u, err := d.Resource(gadgetGVR).Namespace(ns).Get(t.Context(), "one", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, int64(5), "spec", "size")
	if _, err := d.Resource(gadgetGVR).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, out, "the update", func(s string) bool { return strings.Contains(s, "one") })
	if code := stop(); code != exitOK {
		t.Errorf("exit %d", code)
	}
	if s := stderr.String(); strings.Contains(s, "level=WARN") {
		t.Errorf("tail warned about a filter that matches updates:\n%s", s)
	}
}

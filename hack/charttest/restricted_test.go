package charttest

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// podTemplate is the workload's pod template, typed.
func podTemplate(t *testing.T, w *unstructured.Unstructured) corev1.PodTemplateSpec {
	t.Helper()
	m, _, _ := unstructured.NestedMap(w.Object, "spec", "template")
	var pt corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &pt); err != nil {
		t.Fatalf("%s's pod template: %v", w.GetKind(), err)
	}
	return pt
}

// podKinds are the kinds of the chart that make pods: the workload and the
// config check's Job.
var podKinds = []string{"Deployment", "StatefulSet", "Job"}

// checkRestricted evaluates every pod the rendering makes (the workload's,
// and the config check's) with the Pod Security admission's own checks at
// the restricted level, latest version (the API server enforces the same in
// TestDryRun).
func checkRestricted(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	lv := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	n := 0
	for _, u := range objs {
		if !slices.Contains(podKinds, u.GetKind()) {
			continue
		}
		n++
		pt := podTemplate(t, u)
		agg := policy.AggregateCheckResults(eval.EvaluatePod(lv, &pt.ObjectMeta, &pt.Spec))
		if !agg.Allowed {
			t.Errorf("%s violates the restricted Pod Security level: %s: %s", key(u), agg.ForbiddenReason(), agg.ForbiddenDetail())
		}
	}
	if n == 0 {
		t.Error("no workload rendered")
	}
}

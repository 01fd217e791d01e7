package charttest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// The control plane is started by the first test that needs it and stopped
// by TestMain.
var (
	cpOnce sync.Once
	cp     *testenv.Env
	cpErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if cp != nil {
		cp.Stop()
	}
	os.Exit(code)
}

func controlPlane(t *testing.T) *testenv.Env {
	t.Helper()
	cpOnce.Do(func() { cp, cpErr = testenv.Start(testenv.Options{}) })
	if cpErr != nil {
		t.Fatalf("start the API server: %v", cpErr)
	}
	return cp
}

// warnings collects the API server's warnings (Pod Security's among them).
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.seen
	w.seen = nil
	return s
}

// Every rendering (and each RBAC rendering) is accepted by a real API server:
// a server-side dry run of each object, with strict field validation, in a
// namespace that enforces the restricted Pod Security level and warns on
// workloads that break it; and a dry run of a pod from each workload's
// template, which that level's admission decides on.
func TestDryRun(t *testing.T) {
	env := controlPlane(t)
	cfg := rest.CopyConfig(env.Config)
	warn := &warnings{}
	cfg.WarningHandlerWithContext = warn
	d := dynamic.NewForConfigOrDie(cfg)
	ensureNamespace(t, d, namespace, map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"})
	for _, ns := range []string{"prod", "staging", "demo", "monitoring"} {
		ensureNamespace(t, d, ns, nil)
	}
	installMonitoringCRDs(t, d)
	all := append([]values{}, rbacRenderings...)
	for _, r := range renderings {
		all = append(all, r.values)
	}
	for _, v := range all {
		t.Run(v.String(), func(t *testing.T) {
			for _, u := range mustRender(t, v) {
				dryRunCreate(t, d, u)
				if w := warn.take(); len(w) > 0 {
					t.Errorf("the API server warns on %s: %v", key(u), w)
				}
				if slices.Contains(podKinds, u.GetKind()) {
					dryRunCreate(t, d, podOf(t, u))
					if w := warn.take(); len(w) > 0 {
						t.Errorf("the API server warns on a pod of %s: %v", key(u), w)
					}
				}
			}
		})
	}
}

func gvrOf(u *unstructured.Unstructured) schema.GroupVersionResource {
	gvr, _ := meta.UnsafeGuessKindToResource(u.GroupVersionKind())
	return gvr
}

func dryRunCreate(t *testing.T, d dynamic.Interface, u *unstructured.Unstructured) {
	t.Helper()
	opts := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict}
	if _, err := d.Resource(gvrOf(u)).Namespace(u.GetNamespace()).Create(t.Context(), u, opts); err != nil {
		t.Errorf("the API server rejects %s: %v", key(u), err)
	}
}

// podOf is a pod as the workload's controller (or the Job's) would make it:
// its template, named, and for a StatefulSet each claim's volume.
func podOf(t *testing.T, w *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	tmpl, _, _ := unstructured.NestedMap(w.Object, "spec", "template")
	pod := &unstructured.Unstructured{Object: tmpl}
	pod.SetAPIVersion("v1")
	pod.SetKind("Pod")
	pod.SetName(w.GetName() + "-0")
	pod.SetNamespace(w.GetNamespace())
	claims, _, _ := unstructured.NestedSlice(w.Object, "spec", "volumeClaimTemplates")
	vols, _, _ := unstructured.NestedSlice(pod.Object, "spec", "volumes")
	for _, c := range claims {
		name, _, _ := unstructured.NestedString(c.(map[string]any), "metadata", "name")
		vols = append(vols, map[string]any{"name": name, "persistentVolumeClaim": map[string]any{"claimName": name + "-" + pod.GetName()}})
	}
	if err := unstructured.SetNestedSlice(pod.Object, vols, "spec", "volumes"); err != nil {
		t.Fatal(err)
	}
	return pod
}

func ensureNamespace(t *testing.T, d dynamic.Interface, name string, labels map[string]string) {
	t.Helper()
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	ns.SetLabels(labels)
	if _, err := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(t.Context(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// installMonitoringCRDs installs minimal ServiceMonitor and PrometheusRule
// CRDs (the Prometheus Operator's group and names, any spec) and waits until
// they are served.
func installMonitoringCRDs(t *testing.T, d dynamic.Interface) {
	t.Helper()
	crds := d.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		plural := strings.ToLower(kind) + "s"
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": plural + ".monitoring.coreos.com"},
			"spec": map[string]any{
				"group": "monitoring.coreos.com", "scope": "Namespaced",
				"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
			},
		}}
		if _, err := crds.Create(t.Context(), crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		gvr := schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: plural}
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := d.Resource(gvr).Namespace(namespace).List(t.Context(), metav1.ListOptions{})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal(fmt.Errorf("the %s CRD is not served: %w", kind, err))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

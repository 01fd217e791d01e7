package kstatuscheck

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

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

func client(t *testing.T) dynamic.Interface {
	t.Helper()
	cpOnce.Do(func() { cp, cpErr = testenv.Start(testenv.Options{}) })
	if cpErr != nil {
		t.Fatalf("start the API server: %v", cpErr)
	}
	return dynamic.NewForConfigOrDie(cp.Config)
}

var (
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	crdsGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetsGVR     = schema.GroupVersionResource{Group: "kstatuscheck.example.com", Version: "v1", Resource: "widgets"}
)

// unique names an object of one run of a test: -count=N runs reuse the
// control plane.
func unique(prefix string) string { return fmt.Sprintf("%s-%d", prefix, runs.Add(1)) }

var runs atomic.Int64

func obj(v map[string]any) *unstructured.Unstructured { return &unstructured.Unstructured{Object: v} }

// phase is one state of an object: a change made through the API server
// (status through the status subresource, as a controller writes it), and
// the status it should then have, so that the comparison covers each.
type phase struct {
	name string
	// change changes the object as it stands.
	change func(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured
	want   string
}

// run goes through the phases on one object and compares kstatus and
// dynwatch on the object as the API server returns it after each.
func run(t *testing.T, d dynamic.ResourceInterface, name string, phases []phase) {
	t.Helper()
	for _, p := range phases {
		u, err := d.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.change != nil {
			p.change(t, u)
			if u, err = d.Get(t.Context(), name, metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		b, err := u.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		_, got := compare(t, name+" "+p.name, b)
		if got.Status != p.want {
			t.Errorf("%s %s: dynwatch %s (%q), want %s: the phase is not what it was meant to be", name, p.name, got.Status, got.Message, p.want)
		}
	}
}

func writeStatus(t *testing.T, d dynamic.ResourceInterface, u *unstructured.Unstructured, status map[string]any) {
	t.Helper()
	u.Object["status"] = status
	if _, err := d.UpdateStatus(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func cond(typ, status, reason, message string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": message,
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "lastUpdateTime": time.Now().UTC().Format(time.RFC3339)}
}

// There are no controllers in the test environment: the Deployment's status
// is written as the deployment controller writes it in each phase of a
// rollout, and read back as the API server serves it.
func TestDeploymentPhases(t *testing.T) {
	d := client(t).Resource(deploymentsGVR).Namespace("default")
	labels := map[string]any{"app": "kstatuscheck"}
	name := unique("web")
	_, err := d.Create(t.Context(), obj(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "finalizers": []any{"kstatuscheck.example.com/hold"}},
		"spec": map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "registry.example.com/web:1"}}}}}}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := func(gen, replicas, updated, ready, available int64, conds ...any) func(*testing.T, *unstructured.Unstructured) *unstructured.Unstructured {
		return func(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
			writeStatus(t, d, u, map[string]any{"observedGeneration": gen, "replicas": replicas, "updatedReplicas": updated,
				"readyReplicas": ready, "availableReplicas": available, "conditions": conds})
			return u
		}
	}
	scale := func(n int64) func(*testing.T, *unstructured.Unstructured) *unstructured.Unstructured {
		return func(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
			patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": n}})
			if _, err := d.Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			return u
		}
	}
	progressing := cond("Progressing", "True", "ReplicaSetUpdated", `ReplicaSet "web-1" is progressing.`)
	done := cond("Progressing", "True", "NewReplicaSetAvailable", `ReplicaSet "web-1" has successfully progressed.`)
	available := cond("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
	unavailable := cond("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.")
	run(t, d, name, []phase{
		{"created", nil, "InProgress"},
		{"observed, no pods", status(1, 0, 0, 0, 0, progressing, unavailable), "InProgress"},
		{"rolling out", status(1, 2, 1, 1, 1, progressing, unavailable), "InProgress"},
		{"all ready, still progressing", status(1, 2, 2, 2, 2, progressing, available), "InProgress"},
		{"available", status(1, 2, 2, 2, 2, done, available), "Current"},
		{"scaled, not yet observed", scale(3), "InProgress"},
		{"scaled, observed", status(2, 2, 2, 2, 2, progressing, available), "InProgress"},
		{"deadline exceeded", status(2, 2, 2, 2, 2, cond("Progressing", "False", "ProgressDeadlineExceeded", `ReplicaSet "web-1" has timed out progressing.`), available), "Failed"},
		{"scaled down, old pods left", scale(1), "InProgress"},
		{"scaled down, observed", status(3, 3, 1, 1, 1, done, available), "InProgress"},
		{"scaled down, done", status(3, 1, 1, 1, 1, done, available), "Current"},
		{"deleted, held by a finalizer", func(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
			if err := d.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			return u
		}, "Terminating"},
	})
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := d.Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A CRD installed on the server is Current once established, and its
// resources' Ready, Reconciling and Stalled conditions and observedGeneration,
// written through the status subresource, read the same in both.
func TestCustomResourceConditions(t *testing.T) {
	c := client(t)
	crds := c.Resource(crdsGVR)
	_, err := crds.Create(t.Context(), obj(map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.kstatuscheck.example.com"},
		"spec": map[string]any{"group": "kstatuscheck.example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema":       map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		u, err := crds.Get(t.Context(), "widgets.kstatuscheck.example.com", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := u.MarshalJSON()
		if _, h := compare(t, "widgets CRD", b); h.Status == "Current" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the CRD was not established in 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	var w dynamic.ResourceInterface
	for {
		w = c.Resource(widgetsGVR).Namespace("default")
		if _, err := w.List(t.Context(), metav1.ListOptions{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("widgets not served in 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	name := unique("w")
	if _, err := w.Create(t.Context(), obj(map[string]any{"apiVersion": "kstatuscheck.example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"size": int64(1)}}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	conds := func(gen int64, cs ...any) func(*testing.T, *unstructured.Unstructured) *unstructured.Unstructured {
		return func(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
			writeStatus(t, w, u, map[string]any{"observedGeneration": gen, "conditions": cs})
			return u
		}
	}
	resize := func(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
		if _, err := w.Patch(t.Context(), name, types.MergePatchType, []byte(`{"spec":{"size":2}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		return u
	}
	run(t, w, name, []phase{
		{"created", nil, "Current"},
		{"reconciling", conds(1, cond("Reconciling", "True", "Provisioning", "creating the bucket"), cond("Ready", "False", "Provisioning", "")), "InProgress"},
		{"ready false", conds(1, cond("Ready", "False", "Waiting", "waiting for the bucket")), "InProgress"},
		{"ready unknown", conds(1, cond("Ready", "Unknown", "Checking", "")), "InProgress"},
		{"ready", conds(1, cond("Ready", "True", "Provisioned", ""), cond("Reconciling", "False", "Done", "")), "Current"},
		{"spec changed", resize, "InProgress"},
		{"stalled", conds(2, cond("Stalled", "True", "Quota", "out of quota"), cond("Ready", "False", "Quota", "out of quota")), "Failed"},
		{"stalled false, ready", conds(2, cond("Stalled", "False", "Recovered", ""), cond("Ready", "True", "Provisioned", "")), "Current"},
	})
}

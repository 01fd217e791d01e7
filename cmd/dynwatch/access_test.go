package main

import (
	"flag"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// golden compares got with testdata/NAME.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

const cmOnlyUser, cmOnlyToken = "cm-only", "cm-only-token"

// grantConfigMaps lets the cm-only user list and watch ConfigMaps everywhere.
func grantConfigMaps(t *testing.T) {
	t.Helper()
	if err := cp.GrantListWatch(t.Context(), "cm-reader", cmOnlyUser, "", "configmaps"); err != nil {
		t.Fatal(err)
	}
}

// cmOnlyKubeconfig writes a kubeconfig of the cm-only user and returns its path.
func cmOnlyKubeconfig(t *testing.T) string {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig, cmOnlyToken); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// createCRD installs a namespaced CRD of group, served in version with any
// schema (extra is merged into the version, e.g. deprecated), if it is not there.
func createCRD(t *testing.T, group, plural, kind, version string, extra map[string]any) {
	t.Helper()
	v := map[string]any{"name": version, "served": true, "storage": true,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
	maps.Copy(v, extra)
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{"group": group, "scope": "Namespaced", "versions": []any{v},
			"names": map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind}},
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dynamic.NewForConfigOrDie(cp.Config).Resource(crdGVR).Create(t.Context(), &unstructured.Unstructured{Object: crd}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func TestCheckCluster(t *testing.T) {
	grantConfigMaps(t)
	kubeconfig := cmOnlyKubeconfig(t)
	code, stdout, stderr := runCLI(t, "check", "--cluster", "--config", "testdata/access.yaml", "--kubeconfig", kubeconfig)
	if code != exitFailure {
		t.Errorf("exit %d, want 1: a rule selects nothing and others lack permission", code)
	}
	if !strings.Contains(stderr, "some rules select nothing or lack permission") {
		t.Errorf("stderr = %s", stderr)
	}
	golden(t, "check-cluster-cm-only", stdout)

	// The admin may do everything: only the rule that selects nothing fails.
	code, stdout, _ = runCLI(t, "check", "--cluster", "--config", "testdata/access.yaml", "--kubeconfig", cp.Kubeconfig)
	if code != exitFailure || strings.Contains(stdout, "DENIED") || !strings.Contains(stdout, "rule ghosts: FAIL: selects no served resource") {
		t.Errorf("admin: exit %d\n%s", code, stdout)
	}
	code, stdout, _ = runCLI(t, "check", "--cluster", "--config", "testdata/rbac-exact.yaml", "--kubeconfig", cp.Kubeconfig)
	want := "rule widgets-everywhere:\n  warning: selector group=\"example.com\" resource=widgets matches no served resource\n  deployments.v1.apps (all namespaces): list allowed, watch allowed\n"
	if code != exitOK || !strings.Contains(stdout, want) {
		t.Errorf("a selector that matches nothing beside one that matches: exit %d, want 0 and a warning\n%s", code, stdout)
	}
}

func TestRBAC(t *testing.T) {
	code, stdout, stderr := runCLI(t, "rbac", "--config", "testdata/rbac-exact.yaml", "--service-account", "ops/watcher")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden(t, "rbac-exact", stdout)

	code, _, stderr = runCLI(t, "rbac", "--config", "testdata/access.yaml")
	if code != exitUsage || !strings.Contains(stderr, `rule nodes: selector kind=Node needs discovery to resolve`) ||
		!strings.Contains(stderr, `rule ghosts: selector group="*.nowhere.example" resource=*`) {
		t.Errorf("offline globs: exit %d, stderr %s", code, stderr)
	}

	code, stdout, stderr = runCLI(t, "rbac", "--cluster", "--config", "testdata/access.yaml", "--kubeconfig", cp.Kubeconfig)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden(t, "rbac-cluster", stdout)

	// Applied to the cluster, the generated RBAC gives the ServiceAccount exactly
	// what the config needs: check --cluster as it passes for every rule that
	// selects something, and it still cannot read what no rule selects.
	d := dynamic.NewForConfigOrDie(cp.Config)
	for _, ns := range []string{"dynwatch", "team-a", "team-b"} {
		_, _ = d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(t.Context(),
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}, metav1.CreateOptions{})
	}
	for _, doc := range strings.Split(stdout, "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("generated YAML does not parse: %v\n%s", err, doc)
		}
		u := &unstructured.Unstructured{Object: obj}
		gv, _ := schema.ParseGroupVersion(u.GetAPIVersion())
		gvr := gv.WithResource(strings.ToLower(u.GetKind()) + "s")
		if _, err := d.Resource(gvr).Namespace(u.GetNamespace()).Create(t.Context(), u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("the API server rejects the generated %s: %v", u.GetKind(), err)
		}
	}
	asSA := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cp.WriteKubeconfigAs(asSA, testenv.AdminToken, "system:serviceaccount:dynwatch:dynwatch"); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = runCLI(t, "check", "--cluster", "--config", "testdata/access.yaml", "--kubeconfig", asSA)
	if code != exitFailure || strings.Contains(stdout, "DENIED") || !strings.Contains(stdout, "rule ghosts: FAIL") {
		t.Errorf("as the ServiceAccount: exit %d\n%s", code, stdout)
	}
	code, _, _ = runCLI(t, "check", "--cluster", "--config", "testdata/rbac-exact.yaml", "--kubeconfig", asSA)
	if code != exitFailure {
		t.Errorf("the ServiceAccount could read events in team-a, which access.yaml does not select: exit %d", code)
	}
}

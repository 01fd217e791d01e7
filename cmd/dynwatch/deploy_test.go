package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/internal/testenv"
	"github.com/dynwatch/dynwatch/plan"
)

// render builds a deploy/ variant with kustomize, as `kubectl apply -k` would.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range m.Resources() {
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

func key(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

func gvrOf(u *unstructured.Unstructured) schema.GroupVersionResource {
	gv, _ := schema.ParseGroupVersion(u.GetAPIVersion())
	return gv.WithResource(discovery.Plural(u.GetKind()))
}

// rbacOf parses `dynwatch rbac` output into objects by key.
func rbacOf(t *testing.T, config string) map[string]*unstructured.Unstructured {
	t.Helper()
	code, stdout, stderr := runCLI(t, "rbac", "--config", config)
	if code != exitOK {
		t.Fatalf("rbac: %s", stderr)
	}
	out := map[string]*unstructured.Unstructured{}
	for _, doc := range strings.Split(stdout, "\n---\n") {
		b, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		out[key(u)] = u
	}
	return out
}

// Each deploy/ variant renders, holds exactly the RBAC `dynwatch rbac` prints
// for its config, a restricted pod, probes and a valid config, and the API
// server accepts every object (server-side dry run).
func TestDeployVariants(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cp.Config)
	if _, err := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(t.Context(),
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "dynwatch"}}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, variant := range []string{"deployment", "statefulset"} {
		t.Run(variant, func(t *testing.T) {
			objs := render(t, filepath.Join("..", "..", "deploy", variant))
			want := rbacOf(t, filepath.Join("..", "..", "deploy", variant, "config.yaml"))
			got := map[string]bool{}
			for _, u := range objs {
				w, isRBAC := want[key(u)]
				if !isRBAC {
					continue
				}
				got[key(u)] = true
				a, _ := json.Marshal(u.Object)
				b, _ := json.Marshal(w.Object)
				if string(a) != string(b) {
					t.Errorf("%s drifted from `dynwatch rbac`:\n got %s\nwant %s", key(u), a, b)
				}
			}
			for k := range want {
				if !got[k] {
					t.Errorf("%s is missing from the rendered variant (regenerate it with dynwatch rbac)", k)
				}
			}
			checkWorkload(t, objs)
			checkNetworkPolicy(t, objs)
			for _, u := range objs {
				if u.GetKind() == "Namespace" {
					continue
				}
				if _, err := d.Resource(gvrOf(u)).Namespace(u.GetNamespace()).Create(t.Context(), u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil && !apierrors.IsAlreadyExists(err) {
					t.Errorf("the API server rejects %s: %v", key(u), err)
				}
			}
		})
	}
}

// checkWorkload checks the pod template of the variant's workload and its config.
func checkWorkload(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, u := range objs {
		switch u.GetKind() {
		case "ConfigMap":
			data, _, _ := unstructured.NestedString(u.Object, "data", "config.yaml")
			if _, err := plan.Parse("config.yaml", []byte(data)); err != nil {
				t.Errorf("the shipped config is invalid: %v", err)
			}
		case "Deployment", "StatefulSet":
			pod, _, _ := unstructured.NestedMap(u.Object, "spec", "template", "spec")
			b, _ := json.Marshal(pod)
			for _, want := range []string{`"runAsNonRoot":true`, `"readOnlyRootFilesystem":true`, `"allowPrivilegeEscalation":false`, `"drop":["ALL"]`,
				`"type":"RuntimeDefault"`, `"path":"/healthz"`, `"path":"/readyz"`, `"requests":{"cpu":"50m","memory":"64Mi"}`, `"serviceAccountName":"dynwatch"`} {
				if !strings.Contains(string(b), want) {
					t.Errorf("%s's pod lacks %s", u.GetKind(), want)
				}
			}
		}
	}
}

// checkNetworkPolicy checks that a NetworkPolicy selects the workload's pods
// and admits ingress on the operations port only, from labelled namespaces
// only (the scraper's).
func checkNetworkPolicy(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	var pods map[string]string
	var policies []*unstructured.Unstructured
	for _, u := range objs {
		switch u.GetKind() {
		case "Deployment", "StatefulSet":
			pods, _, _ = unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "labels")
		case "NetworkPolicy":
			policies = append(policies, u)
		}
	}
	if len(policies) != 1 {
		t.Fatalf("%d NetworkPolicies, want 1", len(policies))
	}
	np := policies[0]
	sel, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
	if len(sel) == 0 || !labels.SelectorFromSet(sel).Matches(labels.Set(pods)) {
		t.Errorf("the NetworkPolicy selects %v, not the pods (%v)", sel, pods)
	}
	types, _, _ := unstructured.NestedStringSlice(np.Object, "spec", "policyTypes")
	ingress, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
	b, _ := json.Marshal(ingress)
	const want = `[{"from":[{"namespaceSelector":{"matchLabels":{"dynwatch.io/scrape":"true"}}}],"ports":[{"port":8080,"protocol":"TCP"}]}]`
	if !slices.Equal(types, []string{"Ingress"}) || string(b) != want {
		t.Errorf("the NetworkPolicy's ingress (%v) is %s, want %s", types, b, want)
	}
}

// The deployment variant applied for real: dynwatch, run as its ServiceAccount
// with a token from the TokenRequest API and the rendered config, watches what
// the config needs, holds the Lease, and cannot read what it does not select.
func TestDeployedServiceAccountRuns(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cp.Config)
	objs := render(t, filepath.Join("..", "..", "deploy", "deployment"))
	var config string
	for _, u := range objs {
		switch u.GetKind() {
		case "Deployment":
			continue // no controller-manager here: nothing would run it
		case "ConfigMap":
			config, _, _ = unstructured.NestedString(u.Object, "data", "config.yaml")
		}
		b, _ := json.Marshal(u.Object)
		force := true
		if _, err := d.Resource(gvrOf(u)).Namespace(u.GetNamespace()).Patch(t.Context(), u.GetName(), types.ApplyPatchType, b,
			metav1.PatchOptions{FieldManager: "dynwatch-test", Force: &force}); err != nil {
			t.Fatalf("apply %s: %v", key(u), err)
		}
	}
	exp := int64(600)
	tok, err := kubernetes.NewForConfigOrDie(cp.Config).CoreV1().ServiceAccounts("dynwatch").CreateToken(t.Context(), "dynwatch",
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig, tok.Status.Token); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, dir, strings.Replace(config, `address: ":8080"`, `address: "127.0.0.1:0"`, 1))
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", kubeconfig)
	p.waitLog("this replica leads; acting", 30*time.Second)
	p.waitLog("all informers synced", 30*time.Second)
	// /readyz names every watch that cannot list or watch: none may be there.
	readyz := "http://" + servedAddr(p) + "/readyz"
	testenv.WaitFor(t, "/readyz to be ok", 30*time.Second, func() bool { _, body := get(t, readyz); return strings.HasPrefix(body, "ok") })
	if code, body := get(t, readyz); code != http.StatusOK || strings.Contains(body, "degraded") {
		t.Errorf("as its ServiceAccount: /readyz %d %q", code, body)
	}
	p.stopOK(syscall.SIGTERM)
	if log := p.stderr.String(); strings.Contains(log, "cannot watch") || strings.Contains(log, "forbidden") {
		t.Errorf("as its ServiceAccount dynwatch lacks a permission:\n%s", log)
	}
	secrets := writeConfig(t, t.TempDir(), "apiVersion: dynwatch/v1alpha1\nactions: [{name: out, log: {}}]\nrules: [{name: s, resources: [{group: \"\", resource: secrets}], actions: [out]}]\n")
	code, stdout, _ := runCLI(t, "check", "--cluster", "--config", secrets, "--kubeconfig", kubeconfig)
	if code != exitFailure || !strings.Contains(stdout, "list DENIED") {
		t.Errorf("the ServiceAccount may read secrets, which the config does not select: exit %d\n%s", code, stdout)
	}
}

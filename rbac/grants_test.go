package rbac

import (
	"slices"
	"testing"

	"github.com/dynwatch/dynwatch/plan"
)

// Offline, a rule with namespaces on a built-in cluster-scoped resource is
// granted cluster-wide (run watches it so, ignoring the namespaces); a
// namespaced one, and a CRD whose scope is unknown offline, per namespace.
func TestGrantsClusterScopedInNamespacedRule(t *testing.T) {
	t.Parallel()
	const cfg = `apiVersion: dynwatch/v1alpha1
defaults: {namespaces: [prod]}
actions: [{name: out, log: {}}]
rules:
  - name: r
    resources: [{group: "", resource: nodes}, {group: storage.k8s.io, resource: storageclasses}, {group: "", resource: configmaps}, {group: example.com, resource: widgets}]
    actions: [out]
`
	file, err := plan.Parse("c.yaml", []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Grants(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Grant{
		{Group: "", Resource: "nodes"},
		{Group: "storage.k8s.io", Resource: "storageclasses"},
		{Group: "", Resource: "configmaps", Namespace: "prod"},
		{Group: "example.com", Resource: "widgets", Namespace: "prod"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("grants %+v, want %+v", got, want)
	}
}

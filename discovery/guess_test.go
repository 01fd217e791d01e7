package discovery

import "testing"

// Each built-in cluster-scoped resource is known by its kind and by its
// group and resource; a CRD (or a namespaced built-in) is not.
func TestClusterScopedKindsAndResources(t *testing.T) {
	t.Parallel()
	for _, b := range BuiltinClusterScoped {
		if Plural(b.Kind) != b.Resource {
			t.Errorf("%s: resource %s, want its plural %s", b.Kind, b.Resource, Plural(b.Kind))
		}
		if !ClusterScoped(b.Kind) || !ClusterScopedResource(b.Group, b.Resource) {
			t.Errorf("%+v is not reported cluster-scoped", b)
		}
	}
	for _, tc := range []struct{ group, resource string }{
		{"", "configmaps"}, {"apps", "deployments"}, {"example.com", "widgets"}, {"example.com", "nodes"}, {"rbac.authorization.k8s.io", "roles"},
	} {
		if ClusterScopedResource(tc.group, tc.resource) {
			t.Errorf("%s/%s reported cluster-scoped", tc.group, tc.resource)
		}
	}
	if ClusterScoped("ConfigMap") {
		t.Error("ConfigMap reported cluster-scoped")
	}
}

package discovery

import "testing"

// RESOURCE.GROUP takes, as kubectl's RESTMapper does, the start of a group
// when no group is named so in full (storageclass.storage is
// storageclasses.storage.k8s.io, deploy.app is deployments.apps); a group
// named in full comes first.
func TestFindGroupPrefix(t *testing.T) {
	res := func(group, resource, singular, kind string, short ...string) Resource {
		return Resource{Group: group, Version: "v1", Resource: resource, Singular: singular, Kind: kind, ShortNames: short, Verbs: lw, Preferred: true}
	}
	c := &Catalog{
		Resources: []Resource{
			res("apps", "deployments", "deployment", "Deployment", "deploy"),
			res("autoscaling", "horizontalpodautoscalers", "horizontalpodautoscaler", "HorizontalPodAutoscaler", "hpa"),
			res("storage.k8s.io", "storageclasses", "storageclass", "StorageClass", "sc"),
			res("a", "gizmos", "gizmo", "Gizmo"),
			res("a.example.com", "gizmos", "gizmo", "Gizmo"),
		},
		Groups: []string{"", "apps", "autoscaling", "storage.k8s.io", "a.example.com", "a"},
	}
	for name, want := range map[string]string{
		"storageclasses.storage": "storageclasses.v1.storage.k8s.io",
		"storageclass.storage":   "storageclasses.v1.storage.k8s.io",
		"sc.storage":             "storageclasses.v1.storage.k8s.io",
		"deployments.app":        "deployments.v1.apps",
		"deploy.app":             "deployments.v1.apps",
		"hpa.autoscal":           "horizontalpodautoscalers.v1.autoscaling",
		"gizmos.a":               "gizmos.v1.a",
		"gizmos.a.example":       "gizmos.v1.a.example.com",
	} {
		r, err := c.Find(name)
		if err != nil {
			t.Errorf("Find(%q): %v", name, err)
			continue
		}
		if got := r.Ref().String(); got != want {
			t.Errorf("Find(%q) = %s, want %s", name, got, want)
		}
	}
	if r, err := c.Find("deployments.storage"); err == nil {
		t.Errorf("Find(deployments.storage) = %s, want an error: no group starting so serves deployments", r.Ref().String())
	}
}

package discovery

// What can be guessed of a kind without a cluster: `dynwatch test` has none,
// and a selector that names a kind is matched against plurals offline.

import "strings"

// Plural guesses a kind's resource name the way most APIs spell it.
func Plural(kind string) string {
	k := strings.ToLower(kind)
	switch {
	case k == "":
		return ""
	case strings.HasSuffix(k, "s"), strings.HasSuffix(k, "x"), strings.HasSuffix(k, "ch"), strings.HasSuffix(k, "sh"):
		return k + "es"
	case strings.HasSuffix(k, "y") && len(k) > 1 && !strings.ContainsRune("aeiou", rune(k[len(k)-2])):
		return k[:len(k)-1] + "ies"
	}
	return k + "s"
}

// BuiltinClusterScoped are the built-in resources without a namespace, as
// group, kind and resource name. What has no cluster to ask (`dynwatch test`,
// `dynwatch rbac` offline, the Helm chart, whose template keeps a copy of
// this list that a test compares) takes any other resource, a CRD's included,
// to be namespaced, as most are.
var BuiltinClusterScoped = []struct{ Group, Kind, Resource string }{
	{"", "Namespace", "namespaces"},
	{"", "Node", "nodes"},
	{"", "PersistentVolume", "persistentvolumes"},
	{"rbac.authorization.k8s.io", "ClusterRole", "clusterroles"},
	{"rbac.authorization.k8s.io", "ClusterRoleBinding", "clusterrolebindings"},
	{"apiextensions.k8s.io", "CustomResourceDefinition", "customresourcedefinitions"},
	{"storage.k8s.io", "StorageClass", "storageclasses"},
	{"storage.k8s.io", "CSIDriver", "csidrivers"},
	{"storage.k8s.io", "CSINode", "csinodes"},
	{"storage.k8s.io", "VolumeAttachment", "volumeattachments"},
	{"scheduling.k8s.io", "PriorityClass", "priorityclasses"},
	{"apiregistration.k8s.io", "APIService", "apiservices"},
	{"admissionregistration.k8s.io", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations"},
	{"admissionregistration.k8s.io", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations"},
	{"admissionregistration.k8s.io", "ValidatingAdmissionPolicy", "validatingadmissionpolicies"},
	{"admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings"},
	{"networking.k8s.io", "IngressClass", "ingressclasses"},
	{"node.k8s.io", "RuntimeClass", "runtimeclasses"},
	{"certificates.k8s.io", "CertificateSigningRequest", "certificatesigningrequests"},
}

// ClusterScoped reports whether kind is a built-in kind without a namespace;
// any other kind is taken to be namespaced, as most are.
func ClusterScoped(kind string) bool {
	for _, b := range BuiltinClusterScoped {
		if b.Kind == kind {
			return true
		}
	}
	return false
}

// ClusterScopedResource reports whether group and resource name a built-in
// resource without a namespace; any other, a CRD's included, is taken to be
// namespaced.
func ClusterScopedResource(group, resource string) bool {
	for _, b := range BuiltinClusterScoped {
		if b.Group == group && b.Resource == resource {
			return true
		}
	}
	return false
}

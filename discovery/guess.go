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

// clusterScoped are the built-in kinds without a namespace.
var clusterScoped = map[string]bool{"Namespace": true, "Node": true, "PersistentVolume": true, "ClusterRole": true,
	"ClusterRoleBinding": true, "CustomResourceDefinition": true, "StorageClass": true, "PriorityClass": true,
	"APIService": true, "MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true, "IngressClass": true,
	"RuntimeClass": true, "CSIDriver": true, "CSINode": true, "VolumeAttachment": true, "CertificateSigningRequest": true}

// ClusterScoped reports whether kind is a built-in kind without a namespace;
// any other kind is taken to be namespaced, as most are.
func ClusterScoped(kind string) bool { return clusterScoped[kind] }

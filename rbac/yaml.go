package rbac

import (
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// crdRule lets the daemon follow CRDs. It is printed whatever the selectors:
// `dynwatch run` always watches CRDs, so that a CRD installed, removed or moved
// to another version after start is acted on at once, for exact selectors as
// much as for globs (a rule may name a CRD that is not installed yet, or one
// whose served versions change). Without it, that watch shows as degraded in
// /readyz and CRDs are found only by the periodic discovery refresh.
var crdRule = rbacv1.PolicyRule{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: Verbs}

// WriteYAML writes the ServiceAccount, a ClusterRole for the cluster-wide
// grants, a Role per namespace for the others, their bindings to it and, with
// leader election, a Role on its Lease (with shards, on the shards' Leases;
// see leaseRules). The ClusterRole also lets dynwatch
// follow CRDs (see crdRule). Every document is an rbacv1 (or corev1) object
// marshalled as YAML, so no name from the config is ever written as YAML
// syntax; the comments are single lines. What it prints passes Verify, or it
// prints nothing.
func WriteYAML(w io.Writer, grants []Grant, out Output) error {
	byNS := map[string][]Grant{}
	var nss []string
	for _, g := range grants {
		if g.Namespace != "" && byNS[g.Namespace] == nil {
			nss = append(nss, g.Namespace)
		}
		byNS[g.Namespace] = append(byNS[g.Namespace], g)
	}
	var b strings.Builder
	comment(&b, "Least privilege for dynwatch with "+out.Source+": list and watch only.")
	for _, n := range out.Notes {
		comment(&b, n)
	}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: out.SA.Namespace, Name: out.SA.Name}}
	docs := []doc{
		{obj: &corev1.ServiceAccount{TypeMeta: typeMeta("v1", "ServiceAccount"), ObjectMeta: meta(out.SA.Namespace, out.SA.Name)}},
		{obj: &rbacv1.ClusterRole{TypeMeta: typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRole"), ObjectMeta: meta("", "dynwatch"),
			Rules: append(policyRules(byNS[""]), crdRule)}, comments: crdComment},
		{obj: &rbacv1.ClusterRoleBinding{TypeMeta: typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRoleBinding"), ObjectMeta: meta("", "dynwatch"),
			RoleRef: roleRef("ClusterRole", "dynwatch"), Subjects: subject}},
	}
	for _, ns := range nss {
		docs = append(docs, doc{obj: role(ns, "dynwatch", policyRules(byNS[ns]))}, doc{obj: binding(ns, "dynwatch", subject)})
	}
	if l := out.Lease; l != nil {
		say := []string{"Leader election: the replicas share the Lease " + l.Namespace + "/" + l.Name + "."}
		if out.LeaseShards > 0 {
			say = []string{
				fmt.Sprintf("Leader election: each shard's replicas share its Lease, %s/%s-0 to -%d, which they may update.", l.Namespace, l.Name, out.LeaseShards-1),
				"They may get any Lease of " + l.Namespace + ": after a reshard a shard reads the Leases of the set before it,",
				"those of shards past the count after a shrink, and " + l.Name + " after a start without shards.",
			}
		}
		docs = append(docs,
			doc{obj: role(l.Namespace, "dynwatch-leader-election", leaseRules(l.Name, out.LeaseShards)),
				comments: say},
			doc{obj: binding(l.Namespace, "dynwatch-leader-election", subject)})
	}
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		for _, c := range d.comments {
			comment(&b, c)
		}
		y, err := yaml.Marshal(d.obj)
		if err != nil {
			return err
		}
		b.Write(y)
	}
	if err := Verify([]byte(b.String())); err != nil {
		return fmt.Errorf("refusing to print RBAC broader than list and watch: %w", err)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// doc is one YAML document: its comment lines, then the object.
type doc struct {
	comments []string
	obj      any
}

var crdComment = []string{
	"The last rule lets dynwatch follow CRDs: run always watches them, so that a CRD installed,",
	"removed or moved to another version is acted on without a restart, for exact selectors as",
	"for globs; without it that watch is degraded and new CRDs wait for the periodic refresh.",
}

// comment writes s as one YAML comment line: a line break in it (from a file
// name, say) could otherwise end the comment and start YAML.
func comment(b *strings.Builder, s string) {
	b.WriteString("# ")
	b.WriteString(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 {
			return ' '
		}
		return r
	}, s))
	b.WriteByte('\n')
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func meta(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

func roleRef(kind, name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
}

func role(ns, name string, rules []rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{TypeMeta: typeMeta(rbacv1.SchemeGroupVersion.String(), "Role"), ObjectMeta: meta(ns, name), Rules: rules}
}

func binding(ns, name string, subjects []rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{TypeMeta: typeMeta(rbacv1.SchemeGroupVersion.String(), "RoleBinding"), ObjectMeta: meta(ns, name),
		RoleRef: roleRef("Role", name), Subjects: subjects}
}

// leaseRules are the leader-election Role's rules for the Lease name and,
// above 0, shards.count. Without shards: get and update on the one Lease, by
// name. With shards: update on the shard set's own Leases, name-0 to
// name-(shards-1), by name, and get on every Lease of the namespace: after a
// reshard a shard reads the other shards' Leases to learn when they stopped,
// among them Leases the current count does not name (name-N and above, left by
// a larger set before a shrink, and name, left by a set without shards). RBAC
// cannot name "name-ANY INDEX", so that read is namespace-wide, get only (no
// list or watch). Create cannot be limited to a name in RBAC either, so it is
// its own rule (the first replica creates the Lease).
func leaseRules(name string, shards int) []rbacv1.PolicyRule {
	lease := func(verbs []string, names ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: names, Verbs: verbs}
	}
	if shards > 0 {
		return []rbacv1.PolicyRule{lease([]string{"update"}, shardLeases(name, shards)...), lease([]string{"get"}), lease([]string{"create"})}
	}
	return []rbacv1.PolicyRule{lease([]string{"get", "update"}, name), lease([]string{"create"})}
}

// policyRules are one list-and-watch rule per API group, with its resources
// sorted.
func policyRules(grants []Grant) []rbacv1.PolicyRule {
	byGroup := map[string][]string{}
	var groups []string
	for _, g := range grants {
		if byGroup[g.Group] == nil {
			groups = append(groups, g.Group)
		}
		byGroup[g.Group] = append(byGroup[g.Group], g.Resource)
	}
	slices.Sort(groups)
	out := []rbacv1.PolicyRule{}
	for _, g := range groups {
		res := byGroup[g]
		slices.Sort(res)
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: slices.Compact(res), Verbs: Verbs})
	}
	return out
}

// shardLeases are the Leases of count shards: name-0 to name-(count-1).
func shardLeases(name string, count int) []string {
	out := make([]string, count)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", name, i)
	}
	return out
}

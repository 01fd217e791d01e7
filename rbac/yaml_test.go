package rbac

import (
	"bytes"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// What WriteYAML prints is list and watch on the resources given, whatever
// their names hold: a name written as YAML syntax could grant "*" on "*" or
// create on pods/exec. Such a name is refused (config load refuses it first),
// never printed as a rule.
func TestWriteYAMLGrantsOnlyListAndWatch(t *testing.T) {
	t.Parallel()
	injections := []string{
		"configmaps]\n    verbs: [list, watch]\n  - apiGroups: [\"*\"]\n    resources: [\"*\"]\n    verbs: [\"*\"]\n  - apiGroups: [x]\n    resources: [x",
		"x]\n    verbs: [create]\n  - apiGroups: [\"\"]\n    resources: [pods/exec",
		"*", "pods/exec",
	}
	for _, inj := range injections {
		for _, g := range []Grant{{Group: "", Resource: inj}, {Group: inj, Resource: "widgets"}, {Group: "", Resource: inj, Namespace: "team-a"}} {
			var b bytes.Buffer
			err := WriteYAML(&b, []Grant{g}, Output{SA: ServiceAccount{Namespace: "ops", Name: "dynwatch"}, Source: "c.yaml\n- apiGroups: ['*']",
				Lease: &ServiceAccount{Namespace: "ops", Name: inj}})
			if err == nil {
				t.Errorf("grant %+v with lease %q was printed:\n%s", g, inj, b.String())
			}
			if err == nil && Verify(b.Bytes()) == nil {
				t.Errorf("Verify passes output with %q", inj)
			}
		}
	}
}

// The printed rules are exactly the grants, the CRD rule and the Lease rules,
// as an independent YAML parse reads them.
func TestWriteYAMLRules(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	grants := []Grant{{Group: "apps", Resource: "deployments"}, {Group: "", Resource: "configmaps", Namespace: "team-a"}, {Group: "", Resource: "events", Namespace: "team-a"}}
	if err := WriteYAML(&b, grants, Output{SA: ServiceAccount{Namespace: "ops", Name: "w"}, Source: "c.yaml", Lease: &ServiceAccount{Namespace: "ops", Name: "dw"}}); err != nil {
		t.Fatal(err)
	}
	if err := Verify(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	// No selector here is a glob, and the CRD rule is still printed: the
	// output says why.
	if !strings.Contains(b.String(), "# The last rule lets dynwatch follow CRDs: run always watches them") ||
		!strings.Contains(b.String(), "for exact selectors as\n# for globs") {
		t.Errorf("the CRD rule's reason is not printed:\n%s", b.String())
	}
	got := printedRules(b.String())
	want := []string{
		"ClusterRole  dynwatch apps deployments  list,watch",
		"ClusterRole  dynwatch apiextensions.k8s.io customresourcedefinitions  list,watch",
		"Role team-a dynwatch  configmaps,events  list,watch",
		"Role ops dynwatch-leader-election coordination.k8s.io leases dw get,update",
		"Role ops dynwatch-leader-election coordination.k8s.io leases  create",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// With shards, the replicas may update their set's Leases, by name, and get
// any Lease of the namespace (after a reshard a shard reads the Leases of
// the set before it: past the count after a shrink, or the one Lease of a set
// without shards), and the output says why.
func TestWriteYAMLShardLeaseRules(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := WriteYAML(&b, nil, Output{SA: ServiceAccount{Namespace: "ops", Name: "w"}, Source: "c.yaml", Lease: &ServiceAccount{Namespace: "ops", Name: "dw"}, LeaseShards: 3}); err != nil {
		t.Fatal(err)
	}
	if err := Verify(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	for _, say := range []string{"# Leader election: each shard's replicas share its Lease, ops/dw-0 to -2, which they may update.\n",
		"# They may get any Lease of ops: after a reshard a shard reads the Leases of the set before it,\n"} {
		if !strings.Contains(b.String(), say) {
			t.Errorf("the output lacks %q:\n%s", say, b.String())
		}
	}
	got := printedRules(b.String())
	want := []string{
		"ClusterRole  dynwatch apiextensions.k8s.io customresourcedefinitions  list,watch",
		"Role ops dynwatch-leader-election coordination.k8s.io leases dw-0,dw-1,dw-2 update",
		"Role ops dynwatch-leader-election coordination.k8s.io leases  get",
		"Role ops dynwatch-leader-election coordination.k8s.io leases  create",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// printedRules are the rules of the roles in WriteYAML's output, one line
// each (kind, namespace, name, groups, resources, names, verbs), as an
// independent YAML parse reads them.
func printedRules(out string) []string {
	var got []string
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		var doc struct {
			Kind     string
			Metadata struct{ Namespace, Name string }
			Rules    []struct {
				APIGroups     []string `yaml:"apiGroups"`
				Resources     []string
				ResourceNames []string `yaml:"resourceNames"`
				Verbs         []string
			}
		}
		if dec.Decode(&doc) != nil {
			break
		}
		for _, r := range doc.Rules {
			got = append(got, strings.Join([]string{doc.Kind, doc.Metadata.Namespace, doc.Metadata.Name, strings.Join(r.APIGroups, ","), strings.Join(r.Resources, ","),
				strings.Join(r.ResourceNames, ","), strings.Join(r.Verbs, ",")}, " "))
		}
	}
	return got
}

package rbac

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// The leader-election Role names one Lease, or a shard set's: NAME-0 to
// NAME-(N-1), nothing else.
func TestLeaseNames(t *testing.T) {
	for names, want := range map[string]bool{
		"dw": true, "dw-0": true, "dw-0,dw-1,dw-2": true,
		"": false, "dw,other": false, "dw-0,dw-2": false, "dw-1,dw-0": false,
		"dw-0,other-1": false, "dw-0,dw-1,dw-1": false, "*": false, "dw-0,dw-*": false,
	} {
		var list []string
		if names != "" {
			list = strings.Split(names, ",")
		}
		if got := leaseNames(list); got != want {
			t.Errorf("%q: %v, want %v", names, got, want)
		}
	}
}

// A shard set's Leases are NAME-0 to NAME-(N-1); one plain name is not one.
func TestShardLeaseNames(t *testing.T) {
	for names, want := range map[string]bool{
		"dw-0": true, "dw-0,dw-1,dw-2": true,
		"dw": false, "": false, "dw-1": false, "dw-0,dw-2": false, "dw-0,other-1": false, "*-0": false,
	} {
		var list []string
		if names != "" {
			list = strings.Split(names, ",")
		}
		if got := shardLeaseNames(list); got != want {
			t.Errorf("%q: %v, want %v", names, got, want)
		}
	}
}

// The leader-election Role may get any Lease of its namespace only with
// shards (alongside update on the shard set's Leases, by name); update, list,
// watch, delete or patch on every Lease, or get on one without shards, is
// refused, as is any rule on anything but Leases.
func TestVerifyLeaseRules(t *testing.T) {
	t.Parallel()
	lease := func(verbs string, names ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: names, Verbs: strings.Split(verbs, ",")}
	}
	create := lease("create")
	shardUpdate := lease("update", "dw-0", "dw-1")
	for _, c := range []struct {
		name  string
		rules []rbacv1.PolicyRule
		ok    bool
	}{
		{"one Lease", leaseRules("dw", 0), true},
		{"shards", leaseRules("dw", 2), true},
		{"one shard", leaseRules("dw", 1), true},
		{"shards, named get and update", []rbacv1.PolicyRule{lease("get,update", "dw-0", "dw-1"), create}, true},
		{"get on every Lease without shards", []rbacv1.PolicyRule{lease("get,update", "dw"), lease("get"), create}, false},
		{"get on every Lease alone", []rbacv1.PolicyRule{lease("get"), create}, false},
		{"update on every Lease", []rbacv1.PolicyRule{shardUpdate, lease("get"), lease("update"), create}, false},
		{"get and update on every Lease", []rbacv1.PolicyRule{shardUpdate, lease("get,update"), create}, false},
		{"list on every Lease", []rbacv1.PolicyRule{shardUpdate, lease("get"), lease("list"), create}, false},
		{"list and watch on every Lease", []rbacv1.PolicyRule{shardUpdate, lease("get"), lease("list,watch"), create}, false},
		{"get and list on every Lease", []rbacv1.PolicyRule{shardUpdate, lease("get,list"), create}, false},
		{"delete on every Lease", []rbacv1.PolicyRule{shardUpdate, lease("get"), lease("delete"), create}, false},
		{"patch on the shards' Leases", []rbacv1.PolicyRule{lease("patch", "dw-0", "dw-1"), lease("get"), create}, false},
		{"update on a Lease not a shard's", []rbacv1.PolicyRule{lease("update", "dw"), lease("get"), create}, false},
		{"update on shards out of order", []rbacv1.PolicyRule{lease("update", "dw-1", "dw-0"), lease("get"), create}, false},
		{"\"*\" verbs", []rbacv1.PolicyRule{shardUpdate, lease("*"), create}, false},
		{"a subresource", []rbacv1.PolicyRule{shardUpdate, {APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases/status"}, Verbs: []string{"get"}}, create}, false},
		{"another resource", []rbacv1.PolicyRule{shardUpdate, lease("get"), create, {APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: Verbs}}, false},
		{"another group", []rbacv1.PolicyRule{shardUpdate, {APIGroups: []string{"*"}, Resources: []string{"leases"}, Verbs: []string{"get"}}, create}, false},
	} {
		b, err := yaml.Marshal(role("ops", "dynwatch-leader-election", c.rules))
		if err != nil {
			t.Fatal(err)
		}
		if err := Verify(b); (err == nil) != c.ok {
			t.Errorf("%s: Verify: %v, want ok %v\n%s", c.name, err, c.ok, b)
		}
	}
}

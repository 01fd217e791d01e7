package rbac

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
	rbacv1 "k8s.io/api/rbac/v1"
)

// Verify parses what WriteYAML printed and checks that it grants no more than
// dynwatch needs: every rule of every role is list and watch on named
// resources of named groups (no "*", no subresource, no resourceNames, no
// URLs), but for the leader-election Role, whose rules are Lease rules only
// (see verifyLeaseRules); and every binding binds one of those roles. WriteYAML
// runs it on its own output before printing it.
func Verify(out []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for i := 0; ; i++ {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		if err := verifyDoc(doc); err != nil {
			return fmt.Errorf("document %d (%v %v): %w", i, doc["kind"], doc["metadata"], err)
		}
	}
}

func verifyDoc(doc map[string]any) error {
	raw, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	switch doc["kind"] {
	case "ServiceAccount":
		return nil
	case "ClusterRole", "Role":
		var r rbacv1.Role // a ClusterRole's fields but aggregationRule
		if err := strictJSON(raw, &r); err != nil {
			return err
		}
		if r.Name == "dynwatch-leader-election" && doc["kind"] == "Role" {
			return verifyLeaseRules(r.Rules)
		}
		for _, pr := range r.Rules {
			if err := verifyRule(pr); err != nil {
				return err
			}
		}
		return nil
	case "ClusterRoleBinding", "RoleBinding":
		var b rbacv1.RoleBinding
		if err := strictJSON(raw, &b); err != nil {
			return err
		}
		want := "Role"
		if doc["kind"] == "ClusterRoleBinding" {
			want = "ClusterRole"
		}
		if b.RoleRef.Kind != want || b.RoleRef.APIGroup != rbacv1.GroupName || (b.RoleRef.Name != "dynwatch" && b.RoleRef.Name != "dynwatch-leader-election") {
			return fmt.Errorf("binds %s %q, not one of dynwatch's roles", b.RoleRef.Kind, b.RoleRef.Name)
		}
		return nil
	}
	return fmt.Errorf("unexpected kind %v", doc["kind"])
}

func strictJSON(raw []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// verifyLeaseRules checks the leader-election Role's rules (leaseRules): each
// is on coordination.k8s.io leases, no URLs, and one of
//   - get and update on one named Lease, or on a shard set's (NAME-0 …
//     NAME-(N-1));
//   - update on a shard set's Leases;
//   - get on every Lease of the namespace, only alongside update on a shard
//     set's Leases (with shards, a shard reads the Leases of the set before a
//     reshard, whose names the current count does not give);
//   - create (which RBAC cannot limit to a name).
//
// Anything wider (update, list, watch, delete or patch on every Lease, get
// on every Lease without shards, any other resource) is refused.
func verifyLeaseRules(rules []rbacv1.PolicyRule) error {
	shards, anyGet := false, false
	for _, pr := range rules {
		if !slices.Equal(pr.APIGroups, []string{"coordination.k8s.io"}) || !slices.Equal(pr.Resources, []string{"leases"}) || len(pr.NonResourceURLs) > 0 {
			return fmt.Errorf("leader-election rule %+v is not on coordination.k8s.io leases", pr)
		}
		switch {
		case slices.Equal(pr.Verbs, []string{"get", "update"}) && leaseNames(pr.ResourceNames):
		case slices.Equal(pr.Verbs, []string{"update"}) && shardLeaseNames(pr.ResourceNames):
			shards = true
		case slices.Equal(pr.Verbs, []string{"get"}) && len(pr.ResourceNames) == 0:
			anyGet = true
		case slices.Equal(pr.Verbs, []string{"create"}) && len(pr.ResourceNames) == 0:
		default:
			return fmt.Errorf("leader-election rule %+v is not one of the Lease rules", pr)
		}
	}
	if anyGet && !shards {
		return errors.New("leader-election Role: get on every Lease without shards (no update on a shard set's Leases)")
	}
	return nil
}

// verifyRule checks one policy rule: list and watch on named resources.
func verifyRule(pr rbacv1.PolicyRule) error {
	if !slices.Equal(pr.Verbs, Verbs) {
		return fmt.Errorf("verbs %v, want %v", pr.Verbs, Verbs)
	}
	if len(pr.ResourceNames) > 0 || len(pr.NonResourceURLs) > 0 || len(pr.APIGroups) != 1 || len(pr.Resources) == 0 {
		return fmt.Errorf("rule %+v is not list and watch on named resources of one group", pr)
	}
	if g := pr.APIGroups[0]; g != "" && !named(g) {
		return fmt.Errorf("api group %q is not a name", g)
	}
	for _, r := range pr.Resources {
		if !named(r) {
			return fmt.Errorf("resource %q is not a name", r)
		}
	}
	return nil
}

// named reports whether s is a plain lower-case name: no wildcard, no
// subresource, nothing but letters, digits, '-' and '.'.
func named(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// leaseNames reports whether names is one Lease name, or a shard set's (see
// shardLeaseNames).
func leaseNames(names []string) bool {
	if len(names) == 1 && named(names[0]) {
		return true
	}
	return shardLeaseNames(names)
}

// shardLeaseNames reports whether names is a shard set's Leases: "B-0",
// "B-1", … "B-(N-1)", in order, for one name B.
func shardLeaseNames(names []string) bool {
	if len(names) == 0 {
		return false
	}
	base := strings.TrimSuffix(names[0], "-0")
	if base == names[0] || !named(base) {
		return false
	}
	for i, n := range names {
		if n != base+"-"+strconv.Itoa(i) {
			return false
		}
	}
	return true
}

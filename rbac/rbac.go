// Package rbac works out the least privilege a config needs — list and watch on
// exactly the resources it selects, cluster-wide or per namespace — prints it as
// RBAC YAML, and checks it against a cluster with SelfSubjectAccessReviews.
//
// It starts from plan and must not import the daemon's packages (watcher,
// daemon, state).
package rbac

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"

	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/rules"
)

// Verbs are the only verbs dynwatch needs.
var Verbs = []string{"list", "watch"}

// Grant is list and watch on one resource, in one namespace or ("") cluster-wide.
type Grant struct {
	Group     string
	Resource  string
	Namespace string
}

// Grants returns what file needs. With a catalog, selectors (globs and kinds
// included) are resolved through it; without one, each selector must name its
// group and resource exactly, and the ones that do not are returned as errors.
func Grants(file *plan.File, cat *discovery.Catalog) ([]Grant, error) {
	set := map[Grant]bool{}
	var errs []string
	add := func(r *rules.Rule, group, resource string, namespaced bool) {
		if r.Namespaces == nil || !namespaced {
			set[Grant{Group: group, Resource: resource}] = true
			return
		}
		for _, ns := range r.Namespaces {
			set[Grant{Group: group, Resource: resource, Namespace: ns}] = true
		}
	}
	var pl *plan.Plan
	if cat != nil {
		pl = plan.Resolve(file, cat)
	}
	for _, r := range file.Rules {
		if pl != nil {
			for _, res := range pl.Rules[r.Name] {
				add(r, res.Group, res.Resource, res.Namespaced)
			}
			continue
		}
		for _, s := range r.Selectors {
			if !s.GroupSet || s.Resource == "" || hasGlob(s.Group) || hasGlob(s.Resource) {
				errs = append(errs, fmt.Sprintf("rule %s: selector %s needs discovery to resolve (give group and resource exactly, or use --cluster)", r.Name, s))
				continue
			}
			// run watches a cluster-scoped resource cluster-wide whatever
			// the rule's namespaces; a CRD's scope is unknown offline and
			// taken to be namespaced.
			add(r, s.Group, s.Resource, !discovery.ClusterScopedResource(s.Group, s.Resource))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	grants := make([]Grant, 0, len(set))
	for g := range set {
		grants = append(grants, g)
	}
	slices.SortFunc(grants, func(a, b Grant) int {
		return strings.Compare(a.Namespace+"\x00"+a.Group+"\x00"+a.Resource, b.Namespace+"\x00"+b.Group+"\x00"+b.Resource)
	})
	return grants, nil
}

func hasGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// GlobNotes says, for each selector with a pattern, what it resolved to in cat
// today, and that a resource that appears later (a CRD installed after) and
// matches it is not in the printed roles: they must be generated again.
func GlobNotes(file *plan.File, cat *discovery.Catalog) []string {
	var notes []string
	for _, r := range file.Rules {
		for _, sel := range r.Selectors {
			if !hasGlob(sel.Group) && !hasGlob(sel.Resource) && !hasGlob(sel.Kind) && !hasGlob(sel.Version) {
				continue
			}
			var names []string
			for _, res := range cat.Resolve(sel) {
				names = append(names, res.Ref().String())
			}
			got := "nothing served yet"
			if len(names) > 0 {
				got = strings.Join(names, ", ")
			}
			notes = append(notes, fmt.Sprintf("rule %s: %s resolves today to %s.", r.Name, sel, got))
		}
	}
	if len(notes) > 0 {
		notes = append(notes, "Resources that these patterns select later (a CRD installed afterwards) are NOT",
			"in this role: run dynwatch rbac --cluster again after installing one.")
	}
	return notes
}

// ServiceAccount is who the bindings bind.
type ServiceAccount struct {
	Namespace, Name string
}

// Output is what WriteYAML prints besides the grants.
type Output struct {
	// SA is the ServiceAccount, printed first and bound to every role.
	SA ServiceAccount
	// Source names the config, in the header comment.
	Source string
	// Notes are written as comments at the top (see GlobNotes).
	Notes []string
	// Lease, with leader election, is the one Lease the replicas may get,
	// create and update (with LeaseShards, the name of the shards' Leases).
	Lease *ServiceAccount
	// LeaseShards, when above 0, is shards.count: each shard elects on its
	// own Lease, Lease.Name-INDEX, which it may update, and may get any Lease
	// of Lease.Namespace (see leaseRules).
	LeaseShards int
}

// CheckAccess writes, for each rule, the resources it resolves to and whether
// list and watch are allowed on each in each namespace it watches. It returns
// the problems, one line each: a rule that resolves to nothing, a resource
// and scope where a verb is denied.
func CheckAccess(ctx context.Context, w io.Writer, ssar authzclient.SelfSubjectAccessReviewsGetter, file *plan.File, cat *discovery.Catalog) (problems []string, err error) {
	pl := plan.Resolve(file, cat)
	for _, r := range file.Rules {
		resolved := pl.Rules[r.Name]
		if len(resolved) == 0 {
			problem := fmt.Sprintf("rule %s: selects no served resource (%s)", r.Name, selectorsString(r))
			fmt.Fprintf(w, "rule %s: FAIL: selects no served resource (%s)\n", r.Name, selectorsString(r))
			for _, sel := range r.Selectors {
				if why := cat.WhyNothing(sel); why != "" {
					fmt.Fprintf(w, "  %s: %s\n", sel, why)
				}
			}
			problems = append(problems, problem)
			continue
		}
		fmt.Fprintf(w, "rule %s:\n", r.Name)
		for _, sel := range r.Selectors {
			if len(cat.Resolve(sel)) == 0 {
				fmt.Fprintf(w, "  warning: selector %s matches no served resource\n", sel)
			}
		}
		for _, res := range resolved {
			nss := r.Namespaces
			if nss == nil || !res.Namespaced {
				nss = []string{""}
			}
			for _, ns := range nss {
				line, denied, err := accessLine(ctx, ssar, res, ns)
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(w, "  %s\n", line)
				if denied {
					problems = append(problems, fmt.Sprintf("rule %s: %s", r.Name, line))
				}
			}
		}
	}
	return problems, nil
}

// accessLine asks whether each of Verbs is allowed on res in ns and says the
// verdicts in one line; denied is true when one is not allowed.
func accessLine(ctx context.Context, ssar authzclient.SelfSubjectAccessReviewsGetter, res discovery.Resource, ns string) (line string, denied bool, err error) {
	where := "all namespaces"
	if !res.Namespaced {
		where = "cluster-scoped"
	} else if ns != "" {
		where = "namespace " + ns
	}
	var verdicts []string
	for _, verb := range Verbs {
		allowed, reason, err := allowedTo(ctx, ssar, verb, res, ns)
		if err != nil {
			return "", false, fmt.Errorf("access review for %s %s: %w", verb, res.Resource, err)
		}
		v := verb + " allowed"
		if !allowed {
			denied = true
			v = verb + " DENIED"
			if reason != "" {
				v += " (" + reason + ")"
			}
		}
		verdicts = append(verdicts, v)
	}
	return fmt.Sprintf("%s (%s): %s", res.Ref().String(), where, strings.Join(verdicts, ", ")), denied, nil
}

func selectorsString(r *rules.Rule) string {
	var parts []string
	for _, s := range r.Selectors {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, "; ")
}

func allowedTo(ctx context.Context, ssar authzclient.SelfSubjectAccessReviewsGetter, verb string, res discovery.Resource, ns string) (bool, string, error) {
	review := &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authzv1.ResourceAttributes{Verb: verb, Group: res.Group, Version: res.Version, Resource: res.Resource, Namespace: ns},
	}}
	got, err := ssar.SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, "", err
	}
	return got.Status.Allowed, got.Status.Reason, nil
}

package discovery

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dynwatch/dynwatch/editdist"
)

// Name spells a resource the way kubectl accepts it: resource.group, or the
// resource alone for the core group.
func (r Resource) Name() string { return r.Ref().Name() }

// suggest lists served resources whose names are close to name.
func (c *Catalog) suggest(name string) string {
	head, _, _ := strings.Cut(name, ".")
	var close []string
	for _, r := range c.Resources {
		if !r.Preferred || !r.Watchable() {
			continue
		}
		if editdist.Levenshtein(head, r.Resource) <= 2 || editdist.Levenshtein(head, r.Singular) <= 2 || (len(head) >= 4 && strings.HasPrefix(r.Resource, head)) {
			if !slices.Contains(close, r.Name()) {
				close = append(close, r.Name())
			}
		}
	}
	if len(close) == 0 {
		return " (run dynwatch resources to see what the server serves)"
	}
	return " (did you mean " + strings.Join(close, ", ") + "?)"
}

// MatchesObject reports, offline, whether s selects an object of this group,
// version and kind: as Matches does, but without discovery, so the plural a
// resource pattern is matched against is guessed from the kind (Deployment →
// deployments, Ingress → ingresses, NetworkPolicy → networkpolicies) and an
// empty version matches any.
func (s Selector) MatchesObject(group, version, kind string) bool {
	if s.GroupSet && !globMatch(s.Group, group) {
		return false
	}
	if s.Version != "" && !globMatch(s.Version, version) {
		return false
	}
	if s.Kind != "" && !globMatch(s.Kind, kind) {
		return false
	}
	return s.Resource == "" || globMatch(s.Resource, Plural(kind))
}

// WhyNothing says why s selects no served resource: it matches resources that
// cannot be listed and watched (naming their verbs), or names that are close
// to served ones ("did you mean …"); "" when there is nothing to say.
func (c *Catalog) WhyNothing(s Selector) string {
	for _, r := range c.Resources {
		if !r.Watchable() && s.matchesIgnoringVerbs(r) {
			return fmt.Sprintf("%s is served but cannot be listed and watched (its verbs: %s), so no rule can fire on it", r.Name(), strings.Join(r.Verbs, ", "))
		}
	}
	if hint := c.asKubectlNames(s); hint != "" {
		return hint
	}
	var close []string
	for _, r := range c.Resources {
		if !r.Preferred || !r.Watchable() || (s.GroupSet && !globMatch(s.Group, r.Group)) {
			continue
		}
		switch {
		case s.Kind != "" && !hasGlobChars(s.Kind) && editdist.Levenshtein(strings.ToLower(s.Kind), strings.ToLower(r.Kind)) <= 2:
			close = append(close, "kind: "+r.Kind)
		case s.Resource != "" && !hasGlobChars(s.Resource) && (editdist.Levenshtein(s.Resource, r.Resource) <= 2 || editdist.Levenshtein(s.Resource, r.Singular) <= 2):
			close = append(close, "resource: "+r.Resource)
		}
	}
	slices.Sort(close)
	close = slices.Compact(close)
	if len(close) == 0 {
		return ""
	}
	return "did you mean " + strings.Join(close, " or ") + "?"
}

// asKubectlNames is the hint for a selector that names a resource as kubectl
// would take it but a rule does not (a rule's resource is the plural, its kind
// the kind as written): resource: cm or configmap, kind: configmap.
func (c *Catalog) asKubectlNames(s Selector) string {
	name := s.Resource
	if name == "" {
		name = s.Kind
	}
	if name == "" || hasGlobChars(name) {
		return ""
	}
	if s.GroupSet && s.Group != "" && !hasGlobChars(s.Group) {
		name += "." + s.Group
	}
	r, err := c.Find(name)
	if err != nil || s.GroupSet && !globMatch(s.Group, r.Group) {
		return ""
	}
	return fmt.Sprintf("a rule names a resource by its plural or its kind as written, not as kubectl takes names: did you mean resource: %s (or kind: %s)?", r.Resource, r.Kind)
}

func (s Selector) matchesIgnoringVerbs(r Resource) bool {
	r.Verbs = []string{"list", "watch"}
	return s.Matches(r)
}

func hasGlobChars(p string) bool { return strings.ContainsAny(p, "*?[") }

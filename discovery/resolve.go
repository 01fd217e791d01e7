package discovery

import (
	"fmt"
	"slices"
	"strings"
)

// Find resolves a resource name as kubectl's RESTMapper does: the name is
// read as RESOURCE, RESOURCE.GROUP or RESOURCE.VERSION.GROUP (case-insensitive),
// and RESOURCE is tried, in kubectl's order, as a plural or singular name, then
// as a short name, then (GROUP being the start of a group's name, as in
// storageclass.storage) as a short name and a plural or singular name, then
// as a kind; the first way that fits any served resource decides. Without a version, each group's chosen version is used (see
// Resource.Preferred). When resources of several groups fit, the core group
// wins, then the group the server lists first (so "events" is the core
// group's Event, and "events.events.k8s.io" the other); resources that still
// tie (one group, two resources) are an error listing names that resolve to
// each. A name that fits nothing is an error with the closest names.
func (c *Catalog) Find(name string) (Resource, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return Resource{}, fmt.Errorf("empty resource name")
	}
	qs := parseName(name)
	switch found := c.resolve(qs); len(found) {
	case 0:
	case 1:
		return found[0], nil
	default:
		return Resource{}, c.ambiguous(name, found)
	}
	for _, r := range c.Resources {
		for _, q := range qs {
			if q.fitsGroup(r) && nameFits(q.res, r) && !r.Watchable() {
				return Resource{}, fmt.Errorf("%s is served but cannot be listed and watched (its verbs: %s)", r.Name(), strings.Join(r.Verbs, ", "))
			}
		}
	}
	return Resource{}, fmt.Errorf("unknown resource %q%s", name, c.suggest(name))
}

// resolve returns the resources qs name in the first way of reading a name
// that fits any, of the group kubectl prefers: one, or several that tie.
// The ways come in kubectl's order: plural or singular, short name, then,
// when RESOURCE.GROUP names no group in full, a group that starts so (short
// name, then plural or singular: storageclass.storage, deploy.app), and
// last a kind.
func (c *Catalog) resolve(qs []nameQuery) []Resource {
	var prefixed []nameQuery
	for _, q := range qs {
		if q.group != "*" && q.version == "" {
			prefixed = append(prefixed, nameQuery{res: q.res, group: q.group, prefix: true})
		}
	}
	for _, way := range []struct {
		qs   []nameQuery
		fits func(string, Resource) bool
	}{{qs, pluralOrSingular}, {qs, shortName}, {prefixed, shortName}, {prefixed, pluralOrSingular}, {qs, kindName}} {
		if found := c.matching(way.qs, way.fits); len(found) > 0 {
			return c.firstGroup(found)
		}
	}
	return nil
}

// nameQuery is one way of reading a name: a resource name, and the group and
// version it names ("*" group: any; "" version: the chosen one; prefix: any
// group that starts with group).
type nameQuery struct {
	res, version, group string
	prefix              bool
}

func (q nameQuery) fitsGroup(r Resource) bool {
	return q.group == "*" || q.group == r.Group || (q.prefix && strings.HasPrefix(r.Group, q.group))
}

// parseName reads name every way kubectl does: RESOURCE, RESOURCE.GROUP and,
// when the second part looks like a version, RESOURCE.VERSION.GROUP.
func parseName(name string) []nameQuery {
	qs := []nameQuery{{res: name, group: "*"}}
	if head, rest, ok := strings.Cut(name, "."); ok {
		qs = append(qs, nameQuery{res: head, group: rest})
		if v, g, ok := strings.Cut(rest, "."); ok && looksLikeVersion(v) {
			qs = append(qs, nameQuery{res: head, version: v, group: g})
		}
	}
	return qs
}

// matching returns the watchable resources that one of qs names, as fits
// reads a name, each once.
func (c *Catalog) matching(qs []nameQuery, fits func(string, Resource) bool) []Resource {
	var found []Resource
	for _, r := range c.Resources {
		if !r.Watchable() {
			continue
		}
		for _, q := range qs {
			if !q.fitsGroup(r) || !fits(q.res, r) {
				continue
			}
			if (q.version == "" && !r.Preferred) || (q.version != "" && q.version != r.Version) {
				continue
			}
			if !slices.ContainsFunc(found, func(f Resource) bool { return f.GVR() == r.GVR() }) {
				found = append(found, r)
			}
		}
	}
	return found
}

// firstGroup keeps the resources of the group kubectl's RESTMapper prefers:
// the core group, then the groups in the order the server lists them; a group
// the catalog does not list comes after those it does (and ties with the
// others it does not list).
func (c *Catalog) firstGroup(rs []Resource) []Resource {
	rank := func(group string) int {
		if group == "" {
			return -1
		}
		if i := slices.Index(c.Groups, group); i >= 0 {
			return i
		}
		return len(c.Groups)
	}
	best := rank(rs[0].Group)
	for _, r := range rs[1:] {
		best = min(best, rank(r.Group))
	}
	var out []Resource
	for _, r := range rs {
		if rank(r.Group) == best {
			out = append(out, r)
		}
	}
	return out
}

// ambiguous says which resources name fits equally and, for each, the names
// that resolve to it.
func (c *Catalog) ambiguous(name string, rs []Resource) error {
	var alts []string
	for _, r := range rs {
		alts = append(alts, fmt.Sprintf("%s (give %s)", r.Ref().String(), strings.Join(c.Spellings(r), " or ")))
	}
	return fmt.Errorf("resource %q is ambiguous: it could be %s", name, strings.Join(alts, ", "))
}

// Spellings are the names that Find resolves to r, shortest first: its
// plural, resource.group, resource.version.group (for the core group,
// resource alone).
func (c *Catalog) Spellings(r Resource) []string {
	tries := []string{r.Resource, r.Name()}
	if r.Group != "" {
		tries = append(tries, r.Resource+"."+r.Version+"."+r.Group)
	}
	var out []string
	for _, s := range slices.Compact(tries) {
		if got := c.resolve(parseName(s)); len(got) == 1 && got[0].GVR() == r.GVR() {
			out = append(out, s)
		}
	}
	return out
}

func nameFits(n string, r Resource) bool {
	return pluralOrSingular(n, r) || shortName(n, r) || kindName(n, r)
}

func pluralOrSingular(n string, r Resource) bool { return n == r.Resource || n == r.Singular }

func shortName(n string, r Resource) bool { return slices.Contains(r.ShortNames, n) }

func kindName(n string, r Resource) bool { return n == strings.ToLower(r.Kind) }

func looksLikeVersion(s string) bool {
	return len(s) > 1 && s[0] == 'v' && s[1] >= '0' && s[1] <= '9'
}

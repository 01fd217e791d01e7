package discovery

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"

	"github.com/dynwatch/dynwatch/event"
)

// Resource is one served group/version/resource.
type Resource struct {
	Group      string   `json:"group"`
	Version    string   `json:"version"`
	Resource   string   `json:"resource"`
	Kind       string   `json:"kind"`
	Singular   string   `json:"-"`
	Namespaced bool     `json:"namespaced"`
	Verbs      []string `json:"verbs"`
	ShortNames []string `json:"shortNames"`
	Categories []string `json:"categories"`
	// Preferred is set on the one version used for the resource when none is
	// named, as kubectl chooses it: the group's preferred version when it
	// serves the resource, else the highest-priority version that does (GA >
	// beta > alpha, then by number). Real groups mix versions: a resource served
	// only in v1alpha1 next to others in v1 is still selected.
	Preferred bool `json:"preferred"`
}

// GVR returns the resource's group/version/resource.
func (r Resource) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
}

// Ref returns the resource as it appears in an event payload.
func (r Resource) Ref() event.Resource {
	return event.Resource{Group: r.Group, Version: r.Version, Resource: r.Resource, Kind: r.Kind, Namespaced: r.Namespaced}
}

// Watchable reports whether the resource supports list and watch.
func (r Resource) Watchable() bool {
	return slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch")
}

// Catalog is a snapshot of discovery: every served resource, and the
// group/versions whose discovery failed (an aggregated API that is down).
type Catalog struct {
	// Resources are sorted by group, preferred version first, then resource.
	Resources []Resource
	// Failed maps a group/version to why its resources could not be listed.
	Failed map[schema.GroupVersion]error
	// Groups are the API groups in the order the server lists them, the core
	// group ("") first: the order in which kubectl's RESTMapper prefers a
	// group when a name fits resources of several (Find).
	Groups []string
}

// Load reads discovery. A partial failure (some group/versions unavailable) is not
// an error: the catalog holds what was served and Failed says what was not.
func Load(dc discovery.DiscoveryInterface) (*Catalog, error) {
	groups, lists, err := dc.ServerGroupsAndResources()
	c := &Catalog{Failed: map[schema.GroupVersion]error{}}
	if err != nil {
		var partial *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &partial) {
			return nil, fmt.Errorf("discovery: %w", err)
		}
		for gv, gerr := range partial.Groups {
			c.Failed[gv] = gerr
		}
	}
	preferred := map[string]string{}
	c.Groups = []string{""}
	for _, g := range groups {
		preferred[g.Name] = g.PreferredVersion.Version
		if g.Name != "" {
			c.Groups = append(c.Groups, g.Name)
		}
	}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, ar := range l.APIResources {
			if strings.Contains(ar.Name, "/") {
				continue // subresources are never watched
			}
			c.Resources = append(c.Resources, fromAPIResource(gv, ar, false))
		}
	}
	choose(c.Resources, preferred)
	c.sort()
	return c, nil
}

// choose marks, for each group/resource, the version used when none is named:
// the group's preferred version when it serves the resource, else the
// highest-priority version that does.
func choose(rs []Resource, preferred map[string]string) {
	type groupResource struct{ group, resource string }
	best := map[groupResource]int{}
	for i, r := range rs {
		k := groupResource{r.Group, r.Resource}
		j, seen := best[k]
		switch {
		case !seen:
			best[k] = i
		case rs[j].Version == preferred[r.Group]:
		case r.Version == preferred[r.Group] || version.CompareKubeAwareVersionStrings(r.Version, rs[j].Version) > 0:
			best[k] = i
		}
	}
	for _, i := range best {
		rs[i].Preferred = true
	}
}

func fromAPIResource(gv schema.GroupVersion, ar metav1.APIResource, preferred bool) Resource {
	return Resource{
		Group:      gv.Group,
		Version:    gv.Version,
		Resource:   ar.Name,
		Kind:       ar.Kind,
		Singular:   singular(ar),
		Namespaced: ar.Namespaced,
		Verbs:      append([]string{}, ar.Verbs...),
		ShortNames: append([]string{}, ar.ShortNames...),
		Categories: append([]string{}, ar.Categories...),
		Preferred:  preferred,
	}
}

func singular(ar metav1.APIResource) string {
	if ar.SingularName != "" {
		return ar.SingularName
	}
	return strings.ToLower(ar.Kind)
}

func (c *Catalog) sort() {
	sort.SliceStable(c.Resources, func(i, j int) bool {
		a, b := c.Resources[i], c.Resources[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Preferred != b.Preferred {
			return a.Preferred
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Resource < b.Resource
	})
}

// Selector selects resources. Empty fields match anything except Version, whose
// empty value means each resource's chosen version (see Resource.Preferred) and
// "*" every served version, and Group, whose empty value
// means the core group when GroupSet is true. Fields may be glob patterns
// (path.Match syntax: "*", "*.example.com").
type Selector struct {
	Group    string
	GroupSet bool
	Version  string
	Resource string
	Kind     string
}

// Validate reports a selector that can never match because a pattern is malformed.
func (s Selector) Validate() error {
	for _, p := range []string{s.Group, s.Version, s.Resource, s.Kind} {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("bad glob pattern %q", p)
		}
	}
	if s.Resource == "" && s.Kind == "" {
		return errors.New("give resource or kind")
	}
	return nil
}

func globMatch(pattern, s string) bool {
	ok, _ := path.Match(pattern, s)
	return ok
}

// Matches reports whether r is selected. Only resources with list and watch match.
func (s Selector) Matches(r Resource) bool {
	if !r.Watchable() {
		return false
	}
	if s.GroupSet && !globMatch(s.Group, r.Group) {
		return false
	}
	if s.Version == "" {
		if !r.Preferred {
			return false
		}
	} else if !globMatch(s.Version, r.Version) {
		return false
	}
	if s.Resource != "" && !globMatch(s.Resource, r.Resource) {
		return false
	}
	if s.Kind != "" && !globMatch(s.Kind, r.Kind) {
		return false
	}
	return true
}

// String describes the selector in the words of the config file.
func (s Selector) String() string {
	var parts []string
	if s.GroupSet {
		parts = append(parts, fmt.Sprintf("group=%q", s.Group))
	}
	if s.Version != "" {
		parts = append(parts, "version="+s.Version)
	}
	if s.Resource != "" {
		parts = append(parts, "resource="+s.Resource)
	}
	if s.Kind != "" {
		parts = append(parts, "kind="+s.Kind)
	}
	return strings.Join(parts, " ")
}

// Resolve returns the resources that any of the selectors selects, each once, in
// catalog order.
func (c *Catalog) Resolve(sels ...Selector) []Resource {
	var out []Resource
	for _, r := range c.Resources {
		for _, s := range sels {
			if s.Matches(r) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

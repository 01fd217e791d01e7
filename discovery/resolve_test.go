package discovery

import (
	"strings"
	"testing"
)

// A name several groups serve resolves as kubectl's RESTMapper resolves it:
// the core group first, then the groups in the order the server lists them
// (not by name); a plural or singular name before a short name, a short name
// before a kind; within a group, the chosen version.
func TestFindOrder(t *testing.T) {
	res := func(group, version, resource, singular, kind string, short ...string) Resource {
		return Resource{Group: group, Version: version, Resource: resource, Singular: singular, Kind: kind, ShortNames: short, Verbs: lw, Namespaced: true}
	}
	rs := []Resource{
		res("", "v1", "events", "event", "Event", "ev"),
		res("events.k8s.io", "v1", "events", "event", "Event", "ev"),
		res("b.example.com", "v1", "gizmos", "gizmo", "Gizmo", "gz"),
		res("a.example.com", "v1", "gizmos", "gizmo", "Gizmo", "gz"),
		res("a.example.com", "v2", "gizmos", "gizmo", "Gizmo", "gz"),
		res("a.example.com", "v1", "sprockets", "sprocket", "Sprocket", "widgets", "gadget"),
		res("c.example.com", "v1", "widgets", "widget", "Widget"),
		res("c.example.com", "v1", "gadgetries", "gadgetry", "Gadget"),
	}
	choose(rs, map[string]string{"events.k8s.io": "v1", "a.example.com": "v2", "b.example.com": "v1", "c.example.com": "v1"})
	serverOrder := []string{"", "events.k8s.io", "b.example.com", "a.example.com", "c.example.com"}
	for _, tc := range []struct {
		name   string
		groups []string
		want   string
	}{
		{"events", serverOrder, "events.v1"},
		{"ev", serverOrder, "events.v1"},
		{"Event", serverOrder, "events.v1"},
		{"EVENTS", serverOrder, "events.v1"},
		{"events.events.k8s.io", serverOrder, "events.v1.events.k8s.io"},
		{"ev.events.k8s.io", serverOrder, "events.v1.events.k8s.io"},
		{"events.v1.events.k8s.io", serverOrder, "events.v1.events.k8s.io"},
		// Two CRD groups: the one the server lists first, not the first by name.
		{"gizmos", serverOrder, "gizmos.v1.b.example.com"},
		{"gz", serverOrder, "gizmos.v1.b.example.com"},
		{"Gizmo", serverOrder, "gizmos.v1.b.example.com"},
		{"gizmos", []string{"", "a.example.com", "b.example.com"}, "gizmos.v2.a.example.com"},
		// Within a group, its preferred version; another when named.
		{"gizmos.a.example.com", serverOrder, "gizmos.v2.a.example.com"},
		{"gizmos.v1.a.example.com", serverOrder, "gizmos.v1.a.example.com"},
		// A plural beats a short name of a group listed earlier; a short
		// name beats a kind of a group listed earlier.
		{"widgets", serverOrder, "widgets.v1.c.example.com"},
		{"gadget", serverOrder, "sprockets.v1.a.example.com"},
	} {
		c := &Catalog{Resources: rs, Groups: tc.groups}
		r, err := c.Find(tc.name)
		if err != nil {
			t.Errorf("Find(%q): %v", tc.name, err)
			continue
		}
		if got := r.Ref().String(); got != tc.want {
			t.Errorf("Find(%q) with groups %v = %s, want %s", tc.name, tc.groups, got, tc.want)
		}
	}
}

// A name that still ties (two resources of one group) lists, for each, the
// names that pick it, and each listed name does pick it.
func TestFindAmbiguousSpellings(t *testing.T) {
	rs := []Resource{
		{Group: "x.example.com", Version: "v1", Resource: "foos", Singular: "foo", Kind: "Foo", Verbs: lw, Preferred: true},
		{Group: "x.example.com", Version: "v1", Resource: "foosets", Singular: "fooset", Kind: "FooSet", ShortNames: []string{"foo"}, Verbs: lw, Preferred: true},
		{Group: "x.example.com", Version: "v1", Resource: "barlists", Singular: "barlist", Kind: "Bar", Verbs: lw, Preferred: true},
		{Group: "x.example.com", Version: "v1", Resource: "barsets", Singular: "barset", Kind: "Bar", Verbs: lw, Preferred: true},
	}
	c := &Catalog{Resources: rs, Groups: []string{"", "x.example.com"}}
	if r, err := c.Find("foo"); err != nil || r.Resource != "foos" {
		t.Errorf("Find(foo) = %v, %v: a singular name comes before a short name", r.Resource, err)
	}
	_, err := c.Find("Bar")
	want := `resource "bar" is ambiguous: it could be barlists.v1.x.example.com (give barlists or barlists.x.example.com or barlists.v1.x.example.com), barsets.v1.x.example.com (give barsets or barsets.x.example.com or barsets.v1.x.example.com)`
	if err == nil || err.Error() != want {
		t.Fatalf("Find(Bar): %v\nwant %s", err, want)
	}
	for _, r := range rs[2:] {
		for _, s := range c.Spellings(r) {
			if got, err := c.Find(s); err != nil || got.GVR() != r.GVR() {
				t.Errorf("%s, a spelling of %s, resolves to %v, %v", s, r.Ref().String(), got.Ref().String(), err)
			}
		}
	}
	if got := strings.Join(c.Spellings(rs[0]), " "); got != "foos foos.x.example.com foos.v1.x.example.com" {
		t.Errorf("spellings of foos: %s", got)
	}
}

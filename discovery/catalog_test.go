package discovery

import (
	"fmt"
	"strings"
	"testing"
)

var lw = []string{"get", "list", "watch"}

func testCatalog() *Catalog {
	c := &Catalog{Resources: []Resource{
		{Group: "", Version: "v1", Resource: "configmaps", Singular: "configmap", Kind: "ConfigMap", Namespaced: true, Verbs: lw, ShortNames: []string{"cm"}, Preferred: true},
		{Group: "", Version: "v1", Resource: "events", Singular: "event", Kind: "Event", Namespaced: true, Verbs: lw, ShortNames: []string{"ev"}, Preferred: true},
		{Group: "", Version: "v1", Resource: "bindings", Singular: "binding", Kind: "Binding", Namespaced: true, Verbs: []string{"create"}, Preferred: true},
		{Group: "events.k8s.io", Version: "v1", Resource: "events", Singular: "event", Kind: "Event", Namespaced: true, Verbs: lw, ShortNames: []string{"ev"}, Preferred: true},
		{Group: "apps", Version: "v1", Resource: "deployments", Singular: "deployment", Kind: "Deployment", Namespaced: true, Verbs: lw, ShortNames: []string{"deploy"}, Preferred: true},
		{Group: "test.example.com", Version: "v2", Resource: "widgets", Singular: "widget", Kind: "Widget", Namespaced: true, Verbs: lw, ShortNames: []string{"wg"}, Preferred: true},
		{Group: "test.example.com", Version: "v1", Resource: "widgets", Singular: "widget", Kind: "Widget", Namespaced: true, Verbs: lw, ShortNames: []string{"wg"}},
		{Group: "other.example.org", Version: "v1", Resource: "gizmos", Singular: "gizmo", Kind: "Gizmo", Namespaced: false, Verbs: lw, Preferred: true},
	}, Groups: []string{"", "events.k8s.io", "apps", "test.example.com", "other.example.org"}}
	c.sort()
	return c
}

func TestSelectorMatches(t *testing.T) {
	c := testCatalog()
	tests := []struct {
		name string
		sel  Selector
		want string
	}{
		{"core group only", Selector{GroupSet: true, Group: "", Resource: "events"}, "events.v1"},
		{"any group", Selector{Resource: "events"}, "events.v1 events.v1.events.k8s.io"},
		{"kind", Selector{Kind: "Deployment"}, "deployments.v1.apps"},
		{"glob group", Selector{GroupSet: true, Group: "*.example.com", Resource: "*"}, "widgets.v2.test.example.com"},
		{"preferred version by default", Selector{Resource: "widgets"}, "widgets.v2.test.example.com"},
		{"pinned version", Selector{Resource: "widgets", Version: "v1"}, "widgets.v1.test.example.com"},
		{"version glob", Selector{Resource: "widgets", Version: "*"}, "widgets.v2.test.example.com widgets.v1.test.example.com"},
		{"no list and watch, never selected", Selector{Resource: "bindings"}, ""},
		{"resource glob", Selector{GroupSet: true, Group: "", Resource: "config*"}, "configmaps.v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range c.Resolve(tt.sel) {
				got = append(got, r.Ref().String())
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("Resolve(%s) = %v, want %s", tt.sel, got, tt.want)
			}
		})
	}
	if err := (Selector{Resource: "[x"}).Validate(); err == nil {
		t.Error("a malformed glob validates")
	}
	if err := (Selector{Group: "apps", GroupSet: true}).Validate(); err == nil {
		t.Error("a selector with neither resource nor kind validates")
	}
}

func TestFind(t *testing.T) {
	c := testCatalog()
	tests := []struct {
		name, want, err string
	}{
		{"configmaps", "configmaps.v1", ""},
		{"configmap", "configmaps.v1", ""},
		{"ConfigMap", "configmaps.v1", ""},
		{"cm", "configmaps.v1", ""},
		{"wg", "widgets.v2.test.example.com", ""},
		{"widget", "widgets.v2.test.example.com", ""},
		{"widgets.test.example.com", "widgets.v2.test.example.com", ""},
		{"widgets.v1.test.example.com", "widgets.v1.test.example.com", ""},
		{"events.events.k8s.io", "events.v1.events.k8s.io", ""},
		{"gizmo", "gizmos.v1.other.example.org", ""},
		{"events", "events.v1", ""},
		{"ev", "events.v1", ""},
		{"Event", "events.v1", ""},
		{"events.v1.events.k8s.io", "events.v1.events.k8s.io", ""},
		{"widgts", "", `unknown resource "widgts" (did you mean widgets.test.example.com?)`},
		{"bindings", "", "bindings is served but cannot be listed and watched"},
		{"widgets.nowhere.io", "", "unknown resource"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := c.Find(tt.name)
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("Find(%q) error = %v, want %q", tt.name, err, tt.err)
			case tt.err == "" && err != nil:
				t.Errorf("Find(%q): %v", tt.name, err)
			case tt.err == "" && r.Ref().String() != tt.want:
				t.Errorf("Find(%q) = %s, want %s", tt.name, r.Ref().String(), tt.want)
			}
		})
	}
}

// Each group/resource gets one version, as kubectl picks it: the group's
// preferred version when it serves the resource, else the highest-priority one
// that does (GA > beta > alpha, then by number).
func TestChooseVersion(t *testing.T) {
	rs := []Resource{
		{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheuses"},
		{Group: "monitoring.coreos.com", Version: "v1alpha1", Resource: "scrapeconfigs"},
		{Group: "monitoring.coreos.com", Version: "v1alpha1", Resource: "alertmanagerconfigs"},
		{Group: "monitoring.coreos.com", Version: "v1beta1", Resource: "alertmanagerconfigs"},
		{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"},
		{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"},
		{Group: "x.example.com", Version: "v2alpha1", Resource: "things"},
		{Group: "x.example.com", Version: "v1", Resource: "things"},
		{Group: "x.example.com", Version: "v1beta2", Resource: "things"},
	}
	choose(rs, map[string]string{"monitoring.coreos.com": "v1", "autoscaling": "v2", "x.example.com": "v3"})
	var chosen []string
	for _, r := range rs {
		if r.Preferred {
			chosen = append(chosen, r.Resource+"."+r.Version)
		}
	}
	want := "[prometheuses.v1 scrapeconfigs.v1alpha1 alertmanagerconfigs.v1beta1 horizontalpodautoscalers.v2 things.v1]"
	if got := fmt.Sprint(chosen); got != want {
		t.Errorf("chosen %s, want %s", got, want)
	}
}

// A resource served only in a version that is not its group's preferred one is
// found by every kubectl-style name.
func TestFindNonPreferredOnly(t *testing.T) {
	lw := []string{"list", "watch"}
	rs := []Resource{
		{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheuses", Kind: "Prometheus", Singular: "prometheus", Verbs: lw},
		{Group: "monitoring.coreos.com", Version: "v1alpha1", Resource: "alertmanagerconfigs", Kind: "AlertmanagerConfig", Singular: "alertmanagerconfig", ShortNames: []string{"amcfg"}, Verbs: lw},
		{Group: "monitoring.coreos.com", Version: "v1alpha1", Resource: "scrapeconfigs", Kind: "ScrapeConfig", Singular: "scrapeconfig", Verbs: lw},
	}
	choose(rs, map[string]string{"monitoring.coreos.com": "v1"})
	c := &Catalog{Resources: rs}
	for _, name := range []string{"amcfg", "alertmanagerconfigs", "ScrapeConfig", "scrapeconfigs.monitoring.coreos.com", "scrapeconfigs.v1alpha1.monitoring.coreos.com"} {
		if _, err := c.Find(name); err != nil {
			t.Errorf("Find(%q): %v", name, err)
		}
	}
	if got := c.Resolve(Selector{Group: "*.coreos.com", GroupSet: true, Resource: "*"}); len(got) != 3 {
		t.Errorf("the glob selects %d of 3 resources", len(got))
	}
	if got := c.Resolve(Selector{Kind: "ScrapeConfig"}); len(got) != 1 || got[0].Version != "v1alpha1" {
		t.Errorf("kind ScrapeConfig resolves to %v", got)
	}
}

// A selector that selects nothing says why: a resource that cannot be
// watched, or a name close to a served one.
func TestWhyNothing(t *testing.T) {
	c := testCatalog()
	for _, tc := range []struct {
		sel  Selector
		want string
	}{
		{Selector{Resource: "bindings"}, "bindings is served but cannot be listed and watched (its verbs: create), so no rule can fire on it"},
		{Selector{Kind: "Deploymnet"}, "did you mean kind: Deployment?"},
		{Selector{Group: "apps", GroupSet: true, Resource: "deploymets"}, "did you mean resource: deployments?"},
		{Selector{Kind: "Nothing"}, ""},
		// kubectl's names, which a rule does not take, get the rule's.
		{Selector{Resource: "deploy"}, "a rule names a resource by its plural or its kind as written, not as kubectl takes names: did you mean resource: deployments (or kind: Deployment)?"},
		{Selector{Group: "apps", GroupSet: true, Resource: "deployment"}, "a rule names a resource by its plural or its kind as written, not as kubectl takes names: did you mean resource: deployments (or kind: Deployment)?"},
		{Selector{Kind: "deployment"}, "a rule names a resource by its plural or its kind as written, not as kubectl takes names: did you mean resource: deployments (or kind: Deployment)?"},
		{Selector{Group: "batch", GroupSet: true, Resource: "deploy"}, ""},
	} {
		if got := c.WhyNothing(tc.sel); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.sel, got, tc.want)
		}
	}
}

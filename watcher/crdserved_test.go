package watcher

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sdiscovery "k8s.io/client-go/discovery"

	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/event"
)

// crdJSON is a CRD of group g, plural widgets, kind Widget, with the given
// versions (name: served), cluster-scoped or not.
func crdJSON(namespaced bool, deleting bool, versions ...any) []byte {
	scope := "Cluster"
	if namespaced {
		scope = "Namespaced"
	}
	var vs []map[string]any
	for i := 0; i+1 < len(versions); i += 2 {
		vs = append(vs, map[string]any{"name": versions[i], "served": versions[i+1], "storage": i == 0})
	}
	md := map[string]any{"name": "widgets.g"}
	if deleting {
		md["deletionTimestamp"] = "2026-12-06T10:00:00Z"
	}
	b, _ := json.Marshal(map[string]any{"kind": "CustomResourceDefinition", "metadata": md,
		"spec": map[string]any{"group": "g", "scope": scope, "names": map[string]any{"plural": "widgets", "kind": "Widget"}, "versions": vs}})
	return b
}

func widgets(versions ...string) *discovery.Catalog {
	cat := &discovery.Catalog{Resources: []discovery.Resource{
		{Group: "g", Version: "v1", Resource: "gadgets", Kind: "Gadget", Namespaced: true},
		{Group: "", Version: "v1", Resource: "widgets", Kind: "Widget", Namespaced: true},
	}}
	for _, v := range versions {
		cat.Resources = append(cat.Resources, discovery.Resource{Group: "g", Version: v, Resource: "widgets", Kind: "Widget", Namespaced: true},
			discovery.Resource{Group: "g", Version: v, Resource: "widgets/status", Kind: "Widget", Namespaced: true})
	}
	return cat
}

func TestCRDServed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cat  *discovery.Catalog
		crd  []byte
		want bool
	}{
		{"served as it says", widgets("v1", "v2"), crdJSON(true, false, "v1", true, "v2", true), true},
		{"a version it does not serve is not in the catalog", widgets("v1"), crdJSON(true, false, "v1", true, "v2", false), true},
		{"a version it serves is not in the catalog yet", widgets("v1"), crdJSON(true, false, "v1", true, "v2", true), false},
		{"not in the catalog at all", widgets(), crdJSON(true, false, "v1", true), false},
		{"the catalog serves a version it no longer serves", widgets("v1", "v2"), crdJSON(true, false, "v1", true, "v2", false), false},
		{"another scope", widgets("v1"), crdJSON(false, false, "v1", true), false},
		{"being deleted", widgets("v1"), crdJSON(true, true, "v1", true), false},
		{"no catalog", nil, crdJSON(true, false, "v1", true), false},
		{"not a CRD", widgets("v1"), []byte(`{"metadata":{"name":"x"}}`), false},
	} {
		if got := crdServed(tc.cat, tc.crd); got != tc.want {
			t.Errorf("%s: crdServed %v, want %v", tc.name, got, tc.want)
		}
	}
	other := widgets("v1")
	other.Resources[2].Kind = "Gizmo"
	if crdServed(other, crdJSON(true, false, "v1", true)) {
		t.Error("served under another kind, and crdServed says it is served as the CRD says")
	}
}

// TestCRDEventKicksOnlyWhatDiscoveryDoesNotServe: the CRD watch's handler
// asks for a discovery refresh on every change but an initial list's CRD
// that the catalog serves as it says.
func TestCRDEventKicksOnlyWhatDiscoveryDoesNotServe(t *testing.T) {
	t.Parallel()
	s := &source{kicks: make(chan struct{}, 1)}
	kicked := func() bool {
		select {
		case <-s.kicks:
			return true
		default:
			return false
		}
	}
	served, unserved := crdJSON(true, false, "v1", true), crdJSON(true, false, "v1", true, "v2", true)
	for _, tc := range []struct {
		name  string
		known *discovery.Catalog
		ev    event.Event
		kick  bool
	}{
		{"initial list, served", widgets("v1"), event.Event{Type: event.Add, Origin: event.InitialList, Object: served}, false},
		{"initial list, a version not served yet", widgets("v1"), event.Event{Type: event.Add, Origin: event.InitialList, Object: unserved}, true},
		{"initial list, no catalog yet", nil, event.Event{Type: event.Add, Origin: event.InitialList, Object: served}, true},
		{"a live add", widgets("v1"), event.Event{Type: event.Add, Origin: event.Live, Object: served}, true},
		{"a live update", widgets("v1"), event.Event{Type: event.Update, Origin: event.Live, Object: served, OldObject: served}, true},
		{"a delete", widgets("v1"), event.Event{Type: event.Delete, Origin: event.Live, Name: "widgets.g", Object: served}, true},
	} {
		s.cat.Store(tc.known)
		s.crdEvent(&tc.ev)
		if got := kicked(); got != tc.kick {
			t.Errorf("%s: kicked %v, want %v", tc.name, got, tc.kick)
		}
	}
}

// TestCRDServedAgainstDiscovery reads a real CRD and the real discovery: a
// CRD served as it says, then changed to serve a second version, which the
// catalog read before does not have, then read again.
func TestCRDServedAgainstDiscovery(t *testing.T) {
	t.Parallel()
	// A group of its own, run after run, that no other test's rule selects.
	group := fmt.Sprintf("served%d.crdserved.test", time.Now().UnixNano()%1e9)
	obj := crd(group, "sprockets", "Sprocket")
	versions := obj["spec"].(map[string]any)["versions"].([]any)
	v2 := map[string]any{}
	for k, v := range versions[0].(map[string]any) {
		v2[k] = v
	}
	v2["name"], v2["served"], v2["storage"] = "v2", false, false
	obj["spec"].(map[string]any)["versions"] = append(versions, v2)
	create(t, crdGVR, "", obj)
	t.Cleanup(func() { // t.Context() is done by now
		_ = dyn(t).Resource(crdGVR).Delete(context.Background(), "sprockets."+group, metav1.DeleteOptions{})
	})
	disc := k8sdiscovery.NewDiscoveryClientForConfigOrDie(env.Config)
	load := func(versions int) *discovery.Catalog {
		var cat *discovery.Catalog
		waitUntil(t, fmt.Sprintf("discovery to serve %d versions of sprockets", versions), 30*time.Second, func() bool {
			c, err := discovery.Load(disc)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, r := range c.Resources {
				if r.Group == group && r.Resource == "sprockets" {
					n++
				}
			}
			cat = c
			return n == versions
		})
		return cat
	}
	get := func() []byte {
		u, err := dyn(t).Resource(crdGVR).Get(t.Context(), "sprockets."+group, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	one := load(1)
	if !crdServed(one, get()) {
		t.Fatalf("a CRD that discovery serves as it says (v1; v2 not served) is taken for one it does not: %s", get())
	}
	mutate(t, crdGVR, "", "sprockets."+group, func(u *unstructured.Unstructured) {
		vs, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		vs[1].(map[string]any)["served"] = true
		_ = unstructured.SetNestedSlice(u.Object, vs, "spec", "versions")
	})
	if crdServed(one, get()) {
		t.Error("a CRD that now serves v2 is taken as served by a catalog read before")
	}
	if two := load(2); !crdServed(two, get()) {
		t.Error("a CRD served in both its versions is taken for one discovery does not serve")
	}
}

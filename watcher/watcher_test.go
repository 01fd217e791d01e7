package watcher

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dynwatch/dynwatch/event"
)

const eventWait = 20 * time.Second

func TestConfigMapLifecycle(t *testing.T) {
	ns, other := namespace(t), namespace(t)
	r := start(t, fmt.Sprintf(`
apiVersion: dynwatch/v1alpha1
actions: [{name: stdout, log: {}}]
rules:
  - name: cm-mode
    resources: [{group: "", resource: configmaps}]
    namespaces: [%s]
    when:
      - {path: data.mode, op: matches, value: "on|off"}
    fields: {mode: data.mode, missing: data.none}
    actions: [stdout]
`, ns))

	create(t, cmGVR, other, configMap(other, "elsewhere", map[string]any{"mode": "on"}))
	create(t, cmGVR, ns, configMap(ns, "ignored", map[string]any{"mode": "maybe"}))
	added := create(t, cmGVR, ns, configMap(ns, "app", map[string]any{"mode": "on"}))
	updated := mutate(t, cmGVR, ns, "app", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "off", "data", "mode")
	})
	remove(t, cmGVR, ns, "app")
	create(t, cmGVR, ns, configMap(ns, "sentinel", map[string]any{"mode": "on"}))

	got := r.settle(t, "stdout", "sentinel")
	if len(got) != 3 {
		t.Fatalf("got %d payloads, want 3 (add, update, delete of app): %+v", len(got), got)
	}
	uid := string(added.GetUID())
	cm := event.Resource{Group: "", Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	want := []struct {
		typ     event.Type
		rv      string
		mode    string
		old     bool
		changed []string
	}{
		{event.Add, added.GetResourceVersion(), "on", false, nil},
		{event.Update, updated.GetResourceVersion(), "off", true, []string{"data.mode"}},
		{event.Delete, "", "off", false, nil},
	}
	for i, w := range want {
		p := got[i]
		t.Run(string(w.typ), func(t *testing.T) {
			if p.Type != w.typ {
				t.Errorf("type = %q, want %q", p.Type, w.typ)
			}
			rv := w.rv
			if rv == "" {
				// A delete carries the version the watch reported for the deletion:
				// a new one, so that its id differs from the last update's.
				rv = p.ResourceVersion
				if rv == "" || rv == updated.GetResourceVersion() {
					t.Errorf("delete resourceVersion = %q, want the deletion's, not the update's %q", rv, updated.GetResourceVersion())
				}
			}
			if p.ID != uid+":"+rv+":"+string(w.typ) {
				t.Errorf("id = %q, want %q", p.ID, uid+":"+rv+":"+string(w.typ))
			}
			if p.Rule != "cm-mode" || p.Namespace != ns || p.Name != "app" || p.UID != uid || p.ResourceVersion != rv {
				t.Errorf("rule/namespace/name/uid/resourceVersion = %q %q %q %q %q", p.Rule, p.Namespace, p.Name, p.UID, p.ResourceVersion)
			}
			if p.Resource != cm {
				t.Errorf("resource = %+v, want %+v", p.Resource, cm)
			}
			if p.Replay {
				t.Error("replay = true for a live event")
			}
			if ts, err := time.Parse(time.RFC3339Nano, p.Time); err != nil || time.Since(ts) > time.Minute {
				t.Errorf("time = %q (%v)", p.Time, err)
			}
			if string(p.Fields["mode"]) != `"`+w.mode+`"` || string(p.Fields["missing"]) != "null" {
				t.Errorf("fields = %s", mustJSON(p.Fields))
			}
			if gjson.GetBytes(p.Object, "data.mode").Str != w.mode || gjson.GetBytes(p.Object, "metadata.name").Str != "app" {
				t.Errorf("object = %s", p.Object)
			}
			if gjson.GetBytes(p.Object, "metadata.managedFields").Exists() {
				t.Error("object carries managedFields")
			}
			if w.old != (p.OldObject != nil) {
				t.Errorf("oldObject present = %v, want %v", p.OldObject != nil, w.old)
			}
			if w.old && gjson.GetBytes(p.OldObject, "data.mode").Str != "on" {
				t.Errorf("oldObject = %s", p.OldObject)
			}
			if !slices.Equal(p.Changed, w.changed) {
				t.Errorf("changed = %v, want %v", p.Changed, w.changed)
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

var widgetGVR = schema.GroupVersionResource{Group: "test.dynwatch.io", Version: "v1", Resource: "widgets"}

// installWidgetCRD installs a namespaced CRD with integer, boolean and string
// fields, and waits until it is served.
func installWidgetCRD(t *testing.T) {
	t.Helper()
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "widgets.test.dynwatch.io"},
		"spec": map[string]any{
			"group": "test.dynwatch.io",
			"scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": []any{"wg"}},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"scale": map[string]any{"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{"type": "object", "properties": map[string]any{
							"replicas": map[string]any{"type": "integer"},
							"size":     map[string]any{"type": "integer"},
							"enabled":  map[string]any{"type": "boolean"},
							"name":     map[string]any{"type": "string"},
							"label":    map[string]any{"type": "string"},
						}},
						"status": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
					},
				}},
			}},
		},
	}
	d := dyn(t)
	if _, err := d.Resource(crdGVR).Get(t.Context(), "widgets.test.dynwatch.io", getOpts); err != nil {
		create(t, crdGVR, "", crd)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := d.Resource(widgetGVR).Namespace("default").List(t.Context(), listOpts)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("widgets not served: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func widget(ns, name string, spec map[string]any) map[string]any {
	return map[string]any{"apiVersion": "test.dynwatch.io/v1", "kind": "Widget", "metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}
}

func TestTypedConditionsOnCRD(t *testing.T) {
	installWidgetCRD(t)
	ns := namespace(t)
	r := start(t, fmt.Sprintf(`
apiVersion: dynwatch/v1alpha1
actions: [{name: stdout, log: {}}]
rules:
  - name: gt5
    resources: [{group: "*.dynwatch.io", kind: Widget}]
    namespaces: [%[1]s]
    on: [add]
    when: [{path: spec.size, op: gt, value: 5}]
    actions: [stdout]
  - name: eq-string-5
    resources: [{group: test.dynwatch.io, resource: widgets}]
    namespaces: [%[1]s]
    on: [add]
    when: [{path: spec.size, op: eq, value: "5"}]
    actions: [stdout]
  - name: eq-number-5
    resources: [{group: test.dynwatch.io, resource: widgets}]
    namespaces: [%[1]s]
    on: [add]
    when: [{path: spec.size, op: eq, value: 5}]
    actions: [stdout]
  - name: enabled
    resources: [{group: test.dynwatch.io, resource: widgets}]
    namespaces: [%[1]s]
    on: [add]
    when: [{path: spec.enabled, op: eq, value: true}]
    actions: [stdout]
  - name: anchored
    resources: [{group: test.dynwatch.io, resource: widgets}]
    namespaces: [%[1]s]
    on: [add]
    when: [{path: spec.name, op: matches, value: "api"}]
    actions: [stdout]
  - name: full-match
    resources: [{group: test.dynwatch.io, resource: widgets}]
    namespaces: [%[1]s]
    on: [add]
    when: [{path: spec.name, op: matches, value: "web-.*"}]
    actions: [stdout]
`, ns))
	create(t, widgetGVR, ns, widget(ns, "seven", map[string]any{"size": int64(7), "enabled": true, "name": "web-api"}))
	create(t, widgetGVR, ns, widget(ns, "five", map[string]any{"size": int64(5), "enabled": false, "name": "api"}))
	create(t, widgetGVR, ns, widget(ns, "five-str", map[string]any{"size": int64(5), "name": "xapix"}))
	create(t, widgetGVR, ns, widget(ns, "sentinel", map[string]any{"size": int64(6)}))

	// seven: gt5, enabled, full-match. five: eq-number-5, anchored.
	// five-str: eq-number-5 (spec.size is an integer field: "5" never matches).
	want := map[string]bool{
		"seven/gt5": true, "seven/enabled": true, "seven/full-match": true,
		"five/eq-number-5": true, "five/anchored": true,
		"five-str/eq-number-5": true,
	}
	got := map[string]bool{}
	for _, p := range r.settle(t, "stdout", "sentinel") {
		got[p.Name+"/"+p.Rule] = true
	}
	for k := range want {
		if !got[k] {
			t.Errorf("missing match %s", k)
		}
	}
	for k := range got {
		if !want[k] {
			t.Errorf("unexpected match %s", k)
		}
	}
}

func TestChangedAndResync(t *testing.T) {
	installWidgetCRD(t)
	ns := namespace(t)
	create(t, widgetGVR, ns, widget(ns, "w", map[string]any{"replicas": int64(1), "label": "a"}))
	r := start(t, fmt.Sprintf(`
apiVersion: dynwatch/v1alpha1
defaults: {resync: 1s}
actions: [{name: stdout, log: {}}]
rules:
  - name: scaled
    resources: [{group: test.dynwatch.io, resource: widgets}]
    namespaces: [%s]
    changed: [spec.replicas]
    fields: {replicas: spec.replicas}
    actions: [stdout]
  - name: updates
    resources: [{group: test.dynwatch.io, resource: widgets}]
    namespaces: [%[1]s]
    on: [update]
    actions: [stdout]
`, ns))
	// A label change and a spec.label change: no event of scaled (updates fires on every update).
	mutate(t, widgetGVR, ns, "w", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"x": "y"}) })
	mutate(t, widgetGVR, ns, "w", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "b", "spec", "label")
	})
	// A scale through the scale subresource: one event.
	mutate(t, widgetGVR, ns, "w", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(3), "spec", "replicas")
	})
	r.out.waitMatch(t, "the scale", eventWait, func(p event.Payload) bool { return p.Rule == "scaled" }) // the label events came before it in the watch
	// Two resyncs of the object: one that fired would be queued by then.
	resynced := r.w.Manager().Resyncs()
	waitUntil(t, "two resyncs", 10*time.Second, func() bool { return r.w.Manager().Resyncs() >= resynced+2 })
	r.quiet(t, "stdout")
	var got []event.Payload
	updates := 0
	for _, p := range r.out.snapshot() {
		if p.Rule == "updates" {
			updates++
			continue
		}
		got = append(got, p)
	}
	if updates != 3 {
		t.Errorf("the rule on every update fired %d times, want 3 (the three writes; resyncs fire nothing)", updates)
	}
	if len(got) != 1 {
		t.Fatalf("got %d payloads, want exactly the scale: %+v", len(got), got)
	}
	if got[0].Type != event.Update || string(got[0].Fields["replicas"]) != "3" || !slices.Contains(got[0].Changed, "spec.replicas") {
		t.Errorf("payload = %+v", got[0])
	}
	if slices.Contains(got[0].Changed, "metadata.labels.x") {
		t.Errorf("changed lists an earlier update's path: %v", got[0].Changed)
	}
}

func TestTwoRulesOneWatch(t *testing.T) {
	ns := namespace(t)
	r := start(t, fmt.Sprintf(`
apiVersion: dynwatch/v1alpha1
actions: [{name: stdout, log: {}}]
rules:
  - name: one
    resources: [{group: "", resource: configmaps}]
    actions: [stdout]
  - name: two
    resources: [{kind: ConfigMap}, {group: "", resource: "config*"}]
    namespaces: [%s]
    labelSelector: "pick=me"
    actions: [stdout]
`, ns))
	create(t, cmGVR, ns, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": ns, "labels": map[string]any{"pick": "me"}}})
	got := r.out.wait(t, 2, eventWait)
	rules := []string{got[0].Rule, got[1].Rule}
	slices.Sort(rules)
	if !slices.Equal(rules, []string{"one", "two"}) {
		t.Errorf("rules fired = %v, want one and two", rules)
	}
	keys := r.w.Manager().Watches()
	if len(keys) != 1 || keys[0].GVR != cmGVR || keys[0].Namespace != "" {
		t.Errorf("manager watches %v, want one all-namespaces configmaps informer", keys)
	}
	if n := r.watches.get("/api/v1/configmaps"); n != 1 {
		t.Errorf("watch requests on /api/v1/configmaps = %d, want 1", n)
	}
	if n := r.watches.others("/api/v1/configmaps", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"); n != 0 {
		t.Errorf("%d watch requests besides configmaps and the CRD watch: %v", n, r.watches.counts)
	}
	if strings.Contains(fmt.Sprint(keys), ns) {
		t.Errorf("a namespaced informer was opened beside the cluster-wide one: %v", keys)
	}
}

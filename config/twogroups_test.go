package config

import (
	"strings"
	"testing"
)

// A selector that names events without a group selects the core group's and
// events.k8s.io's alike, so each Event would come twice: every command that
// loads the file warns, at its line, with the group to add.
func TestEventsWithoutGroupWarns(t *testing.T) {
	t.Parallel()
	const head = "apiVersion: dynwatch/v1alpha1\nactions: [{name: o, log: {}}]\nrules:\n"
	for _, c := range []struct{ rule, want string }{
		{"  - {name: r, resources: [{resource: events}], actions: [o]}\n", `r.yaml:4: rules[0].resources[0]: warning: events are served by two API groups, the core group and events.k8s.io, and this selector, without a group, selects both: each Event comes twice; add group: "" for the core group's (what kubectl get events shows) or group: events.k8s.io`},
		{"  - {name: r, resources: [{kind: ConfigMap}, {kind: Event, version: v1}], actions: [o]}\n", "r.yaml:4: rules[0].resources[1]: warning: events are served by two API groups"},
		{"  - {name: r, resources: [{group: \"\", resource: events}], actions: [o]}\n", ""},
		{"  - {name: r, resources: [{group: events.k8s.io, kind: Event}], actions: [o]}\n", ""},
		{"  - {name: r, resources: [{resource: \"*\"}], actions: [o]}\n", ""},
	} {
		f, err := Parse("r.yaml", []byte(head+c.rule))
		if err != nil {
			t.Fatal(err)
		}
		ws := f.Warnings()
		switch {
		case c.want == "" && len(ws) > 0:
			t.Errorf("%s: warnings %v, want none", c.rule, ws)
		case c.want != "" && (len(ws) != 1 || !strings.HasPrefix(ws[0].Error(), c.want)):
			t.Errorf("%s: warnings %v, want one: %s", c.rule, ws, c.want)
		}
	}
}

// A file's warnings come in the order of their lines, whatever check found
// them by (here the insecure header of line 3 after the events selector of
// line 5).
func TestWarningsInLineOrder(t *testing.T) {
	t.Parallel()
	f, err := Parse("r.yaml", []byte(`apiVersion: dynwatch/v1alpha1
actions:
  - {name: o, webhook: {url: "http://127.0.0.1:9/hook", headers: {Authorization: "Bearer x"}}}
rules:
  - {name: r, resources: [{resource: events}], actions: [o]}
`))
	if err != nil {
		t.Fatal(err)
	}
	ws := f.Warnings()
	if len(ws) != 2 || ws[0].Line != 3 || ws[1].Line != 5 {
		t.Errorf("warnings %v, want line 3's then line 5's", ws)
	}
}

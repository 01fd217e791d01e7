package offline

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dynwatch/dynwatch/plan"
)

// dynwatch test reads health as run does: the config's own health of a kind
// (through Deriver), kstatus' rules for the others (its default), --explain
// showing the health found.
func TestHealthOffline(t *testing.T) {
	f, err := plan.Parse("c.yaml", []byte(`apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: sick, resources: [{kind: Deployment}, {kind: ConfigMap}], when: [{path: health.status, op: ne, value: Current}], actions: [out]}
health:
  - {kind: ConfigMap, cel: 'object.data.mode == "on" ? "Current" : "Failed"'}
`))
	if err != nil {
		t.Fatal(err)
	}
	rolling := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"n","uid":"u","resourceVersion":"1"},"spec":{"replicas":2},"status":{"replicas":1}}`)
	off := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"n","uid":"v","resourceVersion":"1"},"data":{"mode":"off"}}`)
	tests := []struct {
		name    string
		test    Test
		fires   bool
		outputs []string
	}{
		{"kstatus by default", Test{Rule: f.Rule("sick"), New: [][]byte{rolling}, Explain: true}, true,
			[]string{`found "InProgress": holds`, `"health": {`, `"message": "Replicas: 1/2"`}},
		{"the config's own", Test{Rule: f.Rule("sick"), New: [][]byte{off}, Deriver: f.Health}, true, []string{`"status": "Failed"`}},
		{"kstatus without the config's", Test{Rule: f.Rule("sick"), New: [][]byte{off}}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if got := tt.test.Run(&out); got != tt.fires {
				t.Fatalf("fired %v, want %v:\n%s", got, tt.fires, out.String())
			}
			for _, want := range tt.outputs {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

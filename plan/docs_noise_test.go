package plan

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// docBlocks returns the yaml blocks and the json blocks of the docs page
// docs/NAME.
func docBlocks(t *testing.T, name string) (yamls, jsons []string) {
	t.Helper()
	raw, err := os.ReadFile("../docs/" + name)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(raw), -1) {
		yamls = append(yamls, m[1])
	}
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(string(raw), -1) {
		jsons = append(jsons, m[1])
	}
	return yamls, jsons
}

// The Less noise page's example (docs/noise.md) loads, groups, and its
// payload is valid JSON of the group shape (cmd/dynwatch's TestDocsLessNoise
// runs it for real).
func TestDocsLessNoiseExample(t *testing.T) {
	t.Setenv("CHAT_URL", "https://chat.example.invalid/hook")
	yamls, jsons := docBlocks(t, "noise.md")
	if len(yamls) != 1 || len(jsons) != 1 {
		t.Fatalf("%d yaml and %d json blocks, want one each", len(yamls), len(jsons))
	}
	f, err := Parse("docs/noise.md", []byte(yamls[0]))
	if err != nil {
		t.Fatalf("the example does not load: %v", err)
	}
	a := f.Config.Actions[0]
	if a.Group == nil || a.RateLimit == nil || f.Config.Rules[0].Fire != "edges" || len(f.Config.Rules[0].Changed) == 0 || len(f.Config.Rules[0].When) == 0 {
		t.Errorf("the example does not show when, changed, fire: edges, group and rateLimit together")
	}
	var g struct {
		Group  map[string]string
		Count  int
		Events []map[string]any
	}
	if err := json.Unmarshal([]byte(jsons[0]), &g); err != nil {
		t.Fatalf("the payload is not JSON: %v", err)
	}
	if g.Count != len(g.Events) || len(g.Group) != len(a.Group.By) {
		t.Errorf("payload: count %d of %d events, labels %v for by %v", g.Count, len(g.Events), g.Group, a.Group.By)
	}
}

// A grouped webhook's body template reads the group: a field of one event at
// its top is a problem at load, at the body's line; the group's fields load.
func TestGroupedBodyTemplateChecked(t *testing.T) {
	src := func(body string) []byte {
		return []byte(`apiVersion: dynwatch/v1alpha1
actions:
  - name: hook
    webhook: {url: "http://127.0.0.1:9/x", body: '` + body + `'}
    group: {by: [namespace]}
rules: [{name: r, resources: [{kind: ConfigMap}], actions: [hook]}]
`)
	}
	if _, err := Parse("g.yaml", src(`{{.count}} {{range .events}}{{.name}}{{end}}`)); err != nil {
		t.Errorf("a group template: %v", err)
	}
	_, err := Parse("g.yaml", src(`{{.name}}`))
	if err == nil || !strings.Contains(err.Error(), "g.yaml:4: actions[0].webhook.body: bad template: a grouped delivery has no field .name") {
		t.Errorf("a single event's field: %v", err)
	}
}

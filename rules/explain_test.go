package rules

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/payload"
)

// Explain shows what it found as the redacted objects have it, in every step:
// a label that the config redacts is printed neither by the labelSelector
// step nor by a condition or a changed path that reads it.
func TestExplainShowsNoRedactedValue(t *testing.T) {
	t.Parallel()
	const sentinel = "SENTINEL-4e1d"
	f, err := config.Parse("t.yaml", []byte(`
apiVersion: dynwatch/v1alpha1
redact: [{kind: ConfigMap, paths: [metadata.labels.token]}]
actions: [{name: out, log: {}}]
rules:
  - name: r
    resources: [{kind: ConfigMap}]
    labelSelector: "token"
    when: [{path: metadata.labels.token, op: exists}]
    changed: [metadata.labels.token]
    actions: [out]
`))
	if err != nil {
		t.Fatal(err)
	}
	rs, ps := Compile(f)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	red := payload.NewRedactor(f.Config.Redact)
	res := event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	obj := func(token string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns","uid":"u","resourceVersion":"2","labels":{"app":"web","token":"` + token + `"}}}`)
	}
	ev := event.New(event.Update, res, obj(sentinel), obj("old-"+sentinel), time.Now())
	v, steps := rs[0].Explain(ev, nil, red)
	if !v.Fires {
		t.Errorf("the rule does not fire: %v", steps)
	}
	for _, s := range steps {
		if strings.Contains(s.Check+s.Found, sentinel) {
			t.Errorf("step %q shows the redacted label: found %s", s.Check, s.Found)
		}
	}
	if s := fmt.Sprint(steps); !strings.Contains(s, "token=<redacted>") || !strings.Contains(s, "app=web") {
		t.Errorf("the labelSelector step does not show the labels as redacted: %s", s)
	}
}

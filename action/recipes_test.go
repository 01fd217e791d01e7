package action

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/payload"
)

// Every recipe in docs/recipes loads as a config, and its body renders, on a
// sample update event, into the JSON its receiver expects.
func TestRecipes(t *testing.T) {
	t.Setenv("SLACK_WEBHOOK_URL", "https://hooks.example.invalid/services/T/B/X")
	t.Setenv("TEAMS_WEBHOOK_URL", "https://teams.example.invalid/webhook")
	t.Setenv("CLOUDEVENTS_SINK_URL", "https://sink.example.invalid/")
	sample := []byte(`{"id":"u1:42:update","time":"2026-11-29T20:00:00.123Z","type":"update","replay":false,"rule":"deployments",` +
		`"resource":{"group":"apps","version":"v1","resource":"deployments","kind":"Deployment","namespaced":true},` +
		`"namespace":"prod","name":"api","uid":"u1","resourceVersion":"42","changed":["spec.replicas"],` +
		`"object":{"spec":{"replicas":7}},"oldObject":{"spec":{"replicas":3}}}`)
	checks := map[string][]string{
		"slack.yaml":       {`text==update Deployment prod/api (rule deployments)`, `blocks.0.text.type==mrkdwn`},
		"teams.yaml":       {`type==message`, `attachments.0.content.type==AdaptiveCard`, `attachments.0.content.body.1.facts.1.value==spec.replicas`},
		"cloudevents.yaml": {`specversion==1.0`, `id==u1:42:update`, `type==io.dynwatch.update`, `source==dynwatch/deployments/prod`, `data.object.spec.replicas==7`},
	}
	files, _ := filepath.Glob("../docs/recipes/*.yaml")
	if len(files) != len(checks) {
		t.Fatalf("recipes %v, checks for %d", files, len(checks))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cf, err := config.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			a, ferr := Compile(cf.Config.Actions[0])
			if ferr != nil {
				t.Fatal(ferr)
			}
			s, _, err := a.Build(Env{})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := s.(*Webhook).body.Execute(&buf, payload.TemplateData(sample)); err != nil {
				t.Fatal(err)
			}
			if !json.Valid(buf.Bytes()) {
				t.Fatalf("the body is not JSON:\n%s", buf.String())
			}
			for _, c := range checks[filepath.Base(f)] {
				path, want, _ := strings.Cut(c, "==")
				if got := gjson.GetBytes(buf.Bytes(), path).String(); got != want {
					t.Errorf("%s = %q, want %q\n%s", path, got, want, buf.String())
				}
			}
		})
	}
}

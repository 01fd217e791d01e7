package offline

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/plan"
)

// A Deployment as its rollout leaves it: an image changed in its template
// (rv 2), then its controller's status updates while the new pods come up
// (rv 3, 4).
const (
	rolloutBefore = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api","namespace":"prod","uid":"u1","resourceVersion":"1"},
 "spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"api","image":"api:1"}]}}},
 "status":{"replicas":3,"readyReplicas":3,"updatedReplicas":3}}`
	rolloutImage = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api","namespace":"prod","uid":"u1","resourceVersion":"2","generation":2},
 "spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"api","image":"api:2"}]}}},
 "status":{"replicas":3,"readyReplicas":3,"updatedReplicas":3}}`
	rolloutStatus = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api","namespace":"prod","uid":"u1","resourceVersion":"3","generation":2},
 "spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"api","image":"api:2"}]}}},
 "status":{"replicas":4,"readyReplicas":3,"updatedReplicas":1,"observedGeneration":2}}`
	rolloutStatus2 = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api","namespace":"prod","uid":"u1","resourceVersion":"4","generation":2},
 "spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"api","image":"api:2"}]}}},
 "status":{"replicas":3,"readyReplicas":3,"updatedReplicas":3,"observedGeneration":2}}`
)

// Every recipe of docs/recipes passes `dynwatch check --strict --strict-env`
// (the config's schema, its templates, its rules; no warning), and a chat
// recipe posts once for a rollout: for the change of its template, not for
// each status update of its controller.
func TestRecipesCheckAndRollout(t *testing.T) {
	for k, v := range map[string]string{"SLACK_WEBHOOK_URL": "https://hooks.example.invalid/services/T/B/X",
		"TEAMS_WEBHOOK_URL": "https://teams.example.invalid/webhook", "CLOUDEVENTS_SINK_URL": "https://events.example.invalid/"} {
		t.Setenv(k, v)
	}
	chat := map[string]bool{"slack.yaml": true, "teams.yaml": true}
	files, _ := filepath.Glob("../docs/recipes/*.yaml")
	if len(files) == 0 {
		t.Fatal("no recipes in docs/recipes")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := plan.LoadWith(path, config.Options{Strict: true})
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			for _, w := range f.Warnings() {
				t.Errorf("check warns: %v", w)
			}
			if !chat[filepath.Base(path)] {
				return
			}
			for _, r := range f.Rules {
				fires := func(old, new string) bool {
					return Test{Rule: r, Redactor: f.Redactor, Old: [][]byte{[]byte(old)}, New: [][]byte{[]byte(new)}}.Run(io.Discard)
				}
				if !fires(rolloutBefore, rolloutImage) {
					t.Errorf("rule %s does not post the rollout's image change", r.Name)
				}
				for i, pair := range [][2]string{{rolloutImage, rolloutStatus}, {rolloutStatus, rolloutStatus2}} {
					if fires(pair[0], pair[1]) {
						t.Errorf("rule %s posts status update %d of the rollout", r.Name, i+1)
					}
				}
			}
		})
	}
}

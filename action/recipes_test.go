package action

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
)

// request is what a receiver got: one request's headers and body.
type request struct {
	path   string
	header http.Header
	body   []byte
}

// recorder is a loopback receiver that keeps every request it got.
type recorder struct {
	mu  sync.Mutex
	got []request
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got = append(rc.got, request{path: r.URL.Path, header: r.Header.Clone(), body: b})
	rc.mu.Unlock()
}

func (rc *recorder) last(t *testing.T) request {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.got) == 0 {
		t.Fatal("the receiver got no request")
	}
	return rc.got[len(rc.got)-1]
}

// Every recipe in docs/recipes loads as a config and, delivered to a real
// receiver for a sample update event, sends the JSON its receiver expects with
// the Content-Type it needs and the delivery's X-Dynwatch-Delivery-Id.
func TestRecipes(t *testing.T) {
	rc := &recorder{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	t.Setenv("SLACK_WEBHOOK_URL", srv.URL+"/services/T/B/X")
	t.Setenv("TEAMS_WEBHOOK_URL", srv.URL+"/webhook")
	t.Setenv("CLOUDEVENTS_SINK_URL", srv.URL+"/")
	sample := []byte(`{"id":"u1:42:update","time":"2026-11-29T20:00:00.123Z","type":"update","replay":false,"rule":"deployments",` +
		`"resource":{"group":"apps","version":"v1","resource":"deployments","kind":"Deployment","namespaced":true},` +
		`"namespace":"prod","name":"api","uid":"u1","resourceVersion":"42","changed":["spec.replicas"],` +
		`"object":{"spec":{"replicas":7}},"oldObject":{"spec":{"replicas":3}}}`)
	var pl event.Payload
	if err := json.Unmarshal(sample, &pl); err != nil {
		t.Fatal(err)
	}
	checks := map[string]struct {
		path, contentType string
		body              []string
	}{
		"slack.yaml":       {"/services/T/B/X", "application/json", []string{`text==update Deployment prod/api (rule deployments)`, `blocks.0.text.type==mrkdwn`}},
		"teams.yaml":       {"/webhook", "application/json", []string{`type==message`, `attachments.0.content.type==AdaptiveCard`, `attachments.0.content.body.1.facts.1.value==spec.replicas`}},
		"cloudevents.yaml": {"/", "application/cloudevents+json", []string{`specversion==1.0`, `id==u1:42:update`, `type==io.dynwatch.update`, `source==dynwatch/deployments/prod`, `data.object.spec.replicas==7`}},
	}
	files, _ := filepath.Glob("../docs/recipes/*.yaml")
	if len(files) != len(checks) {
		t.Fatalf("recipes %v, checks for %d", files, len(checks))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want := checks[filepath.Base(f)]
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
			if err := s.Send(context.Background(), &event.Delivery{Payload: &pl, JSON: sample, Key: "k"}); err != nil {
				t.Fatal(err)
			}
			got := rc.last(t)
			if got.path != want.path {
				t.Errorf("sent to %s, want %s", got.path, want.path)
			}
			if ct := got.header.Get("Content-Type"); ct != want.contentType {
				t.Errorf("Content-Type = %q, want %q", ct, want.contentType)
			}
			if id := got.header.Get("X-Dynwatch-Delivery-Id"); id != "u1:42:update:deployments" {
				t.Errorf("X-Dynwatch-Delivery-Id = %q, want u1:42:update:deployments", id)
			}
			if !json.Valid(got.body) {
				t.Fatalf("the body is not JSON:\n%s", got.body)
			}
			for _, c := range want.body {
				path, v, _ := strings.Cut(c, "==")
				if g := gjson.GetBytes(got.body, path).String(); g != v {
					t.Errorf("%s = %q, want %q\n%s", path, g, v, got.body)
				}
			}
		})
	}
}

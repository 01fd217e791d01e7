package tail

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/event"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func TestParseWhere(t *testing.T) {
	tests := []struct {
		expr, path, op, value, tag string
	}{
		{"spec.replicas > 3", "spec.replicas", "gt", "3", "!!int"},
		{"spec.replicas>=3", "spec.replicas", "gte", "3", "!!int"},
		{"spec.replicas <= 2.5", "spec.replicas", "lte", "2.5", "!!float"},
		{"status.phase == Running", "status.phase", "eq", "Running", "!!str"},
		{`spec.size == "5"`, "spec.size", "eq", "5", "!!str"},
		{"spec.paused != true", "spec.paused", "ne", "true", "!!bool"},
		{"spec.x == null", "spec.x", "eq", "null", "!!null"},
		{"metadata.name =~ web-.*", "metadata.name", "matches", "web-.*", "!!str"},
		{"metadata.name =~ 123", "metadata.name", "matches", "123", "!!str"},
		{"spec.image == nginx:1.25 ", "spec.image", "eq", "nginx:1.25", "!!str"},
		{`spec.items.#(name=="a").n > 1`, `spec.items.#(name=="a").n`, "gt", "1", "!!int"},
		{`metadata.labels.app\.kubernetes\.io/name == web`, `metadata.labels.app\.kubernetes\.io/name`, "eq", "web", "!!str"},
		{"spec.paused", "spec.paused", "exists", "", ""},
		{"!spec.paused", "spec.paused", "notExists", "", ""},
		// The config's spelled operators.
		{"spec.size gt 3", "spec.size", "gt", "3", "!!int"},
		{"metadata.name matches web-.*", "metadata.name", "matches", "web-.*", "!!str"},
		{"spec.paused notExists", "spec.paused", "notExists", "", ""},
		// Paths as kubectl writes them.
		{".spec.replicas > 3", "spec.replicas", "gt", "3", "!!int"},
		{"{.spec.size} == 5", "spec.size", "eq", "5", "!!int"},
		{"!.spec.paused", "spec.paused", "notExists", "", ""},
		{".spec.containers[0].image =~ nginx.*", "spec.containers.0.image", "matches", "nginx.*", "!!str"},
		{"status.phase in [Running, Pending]", "status.phase", "in", "", ""},
		// An operator inside a gjson query is part of the path.
		{`spec.endpoints.#(interval=="7s")`, `spec.endpoints.#(interval=="7s")`, "exists", "", ""},
		{`spec.endpoints.#(interval>="7s").port == 80`, `spec.endpoints.#(interval>="7s").port`, "eq", "80", "!!int"},
		{`spec.endpoints.#(name=="a==b").port != 1`, `spec.endpoints.#(name=="a==b").port`, "ne", "1", "!!int"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			c, err := ParseWhere(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			if c.Path != tt.path || c.Op != tt.op {
				t.Errorf("got path %q op %q, want %q %q", c.Path, c.Op, tt.path, tt.op)
			}
			if tt.value == "" && tt.op == "in" {
				return
			}
			if tt.value == "" {
				if c.Value.IsSet() {
					t.Errorf("value set for %s", tt.op)
				}
				return
			}
			if c.Value.Node.Value != tt.value || c.Value.Node.ShortTag() != tt.tag {
				t.Errorf("value %q %s, want %q %s", c.Value.Node.Value, c.Value.Node.ShortTag(), tt.value, tt.tag)
			}
		})
	}
	for _, bad := range []string{"", "!", "spec replicas", "spec.replicas >", "== 3"} {
		if _, err := ParseWhere(bad); err == nil {
			t.Errorf("ParseWhere(%q) gave no error", bad)
		}
	}
}

// The filters compile into a rule whose typed conditions behave as in config files.
func TestWhereSemantics(t *testing.T) {
	obj := []byte(`{"spec":{"replicas":5,"size":"5","name":"web-api","endpoints":[{"interval":"30s","port":80},{"interval":"7s","port":81}]}}`)
	tests := []struct {
		expr string
		want bool
	}{
		{"spec.replicas > 3", true},
		{"spec.replicas > 5", false},
		{"spec.replicas == 5", true},
		{`spec.replicas == "5"`, false},
		{`spec.size == "5"`, true},
		{"spec.size == 5", false},
		{"spec.name =~ web-.*", true},
		{"spec.name =~ api", false},
		{"!spec.paused", true},
		{`spec.endpoints.#(interval=="7s")`, true},
		{`spec.endpoints.#(interval=="8s")`, false},
		{`spec.endpoints.#(interval=="7s").port == 81`, true},
		{"spec.endpoints.#.interval == 7s", true},
		{"spec.endpoints.#.interval =~ 3.*", true},
		{"spec.endpoints.#.port > 80", true},
		{"spec.endpoints.#.port != 81", false},
		{"spec.endpoints.#.interval < 10s", true},
		{"cel: object.spec.replicas > 3 && object.spec.name.startsWith('web')", true},
		{"cel: object.spec.endpoints.exists(e, e.port == 81)", true},
		{"cel: object.spec.endpoints.all(e, e.port == 81)", false},
	}
	for _, tt := range tests {
		c, err := ParseWhere(tt.expr)
		if expr, ok := strings.CutPrefix(tt.expr, "cel: "); ok {
			c, err = config.ConditionSpec{CEL: expr}, nil // what --where-cel gives
		}
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Where: []config.ConditionSpec{c}, Resources: []discovery.Resource{{Version: "v1", Resource: "configmaps"}}}
		r, err := o.Rule()
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Decide(&event.Event{Type: event.Add, Object: obj}, nil).Fires; got != tt.want {
			t.Errorf("%s: %v, want %v", tt.expr, got, tt.want)
		}
	}
}

func TestParseColumns(t *testing.T) {
	cols, err := ParseColumns("replicas=spec.replicas, image=spec.template.spec.containers.0.image")
	if err != nil || len(cols) != 2 || cols[1].Name != "image" || cols[1].Path != "spec.template.spec.containers.0.image" {
		t.Errorf("got %+v, %v", cols, err)
	}
	if _, err := ParseColumns("replicas"); err == nil {
		t.Error("a column without a path parsed")
	}
	// kubectl's custom-columns form, and its JSONPath.
	cols, err = ParseColumns("SIZE:.spec.size,IMAGE:{.spec.containers[0].image},app=metadata.labels.app")
	if err != nil || len(cols) != 3 || cols[0] != (Column{"SIZE", "spec.size"}) || cols[1] != (Column{"IMAGE", "spec.containers.0.image"}) || cols[2] != (Column{"app", "metadata.labels.app"}) {
		t.Errorf("got %+v, %v", cols, err)
	}
	_, err = ParseColumns(`WEB:.spec.containers[?(@.name=="web")].image`)
	if err == nil || !strings.Contains(err.Error(), `in gjson: spec.containers.#(name=="web").image`) {
		t.Errorf("a JSONPath filter: %v", err)
	}
}

func TestTableGolden(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	p := NewPrinter(Options{
		Output:   "table",
		Out:      &out,
		Now:      func() time.Time { return now },
		Location: time.UTC,
		Resources: []discovery.Resource{
			{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true},
			{Group: "test.example.com", Version: "v1", Resource: "widgets", Kind: "Widget", Namespaced: true},
		},
		Columns: []Column{{Name: "size", Path: "spec.size"}, {Name: "mode", Path: "data.mode"}},
	})
	p.Hold() // as tail holds the header and the initial list
	if err := p.Header(); err != nil {
		t.Fatal(err)
	}
	events := []struct {
		typ     event.Type
		res     event.Resource
		ns      string
		name    string
		created time.Duration
		fields  string
	}{
		{event.Add, event.Resource{Version: "v1", Resource: "configmaps"}, "default", "settings", 5 * time.Second, `{"mode":"on","size":null}`},
		{event.Update, event.Resource{Group: "test.example.com", Version: "v1", Resource: "widgets"}, "team-a", "big-widget", 3 * time.Hour, `{"size":7,"mode":null}`},
		{event.Delete, event.Resource{Group: "test.example.com", Version: "v1", Resource: "widgets"}, "a-much-longer-namespace", "w", 50 * time.Hour, `{"size":12}`},
		{event.Add, event.Resource{Version: "v1", Resource: "namespaces"}, "", "team-b", 90 * time.Second, `{}`},
	}
	for _, e := range events {
		var fields map[string]json.RawMessage
		_ = json.Unmarshal([]byte(e.fields), &fields)
		obj := `{"metadata":{"creationTimestamp":"` + now.Add(-e.created).Format(time.RFC3339) + `"}}`
		var changed []string
		if e.typ == event.Update {
			changed = []string{"spec.size", "spec.template.spec.containers.0.image", "metadata.labels.app"}
		}
		pl := &event.Payload{Type: e.typ, Resource: e.res, Namespace: e.ns, Name: e.name, Fields: fields, Object: json.RawMessage(obj),
			Changed: changed, Time: now.Add(-time.Minute).Format(event.TimeFormat)}
		if err := p.Print(pl); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Release(); err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/table.golden"
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if out.String() != string(want) {
		t.Errorf("table differs from %s\n got:\n%s\nwant:\n%s", golden, out.String(), want)
	}
	if strings.Count(out.String(), "\n") != 5 {
		t.Errorf("want a header and 4 rows:\n%s", out.String())
	}
}

// --where is strict: a path, one operator, a value; errors list the operators.
func TestParseWhereErrors(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{"spec.size => 3", `after the path "spec.size" comes "=>", which is not an operator`},
		{"spec.size foo 3", "no operator (want PATH OP VALUE with OP one of == != >= <= =~ > <, or spelled: exists, notExists, eq"},
		{"spec.size exists 3", "exists takes no value"},
		{"spec.size ==", "want PATH == VALUE"},
	} {
		_, err := ParseWhere(tc.expr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.expr, err, tc.want)
		}
	}
}

// The other outputs: wide adds UID, version and the whole CHANGED; name is
// kind.group/name as kubectl -o name; yaml is a document per event;
// --no-headers drops the header line.
func TestOutputs(t *testing.T) {
	pl := &event.Payload{Type: event.Update, Resource: event.Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment"},
		Namespace: "prod", Name: "a-deployment-with-a-rather-long-name-indeed", UID: "u-1", ResourceVersion: "42",
		Changed: []string{"spec.replicas", "spec.template.spec.containers.0.image", "metadata.labels.app"}, Object: json.RawMessage(`{}`),
		Time: "2026-11-29T12:00:00.000Z"}
	for _, tc := range []struct {
		o    Options
		want []string
	}{
		{Options{Output: "wide"}, []string{"UID", "RESOURCE-VERSION", "u-1", "42", "spec.replicas,spec.template.spec.containers.0.image,metadata.labels.app", "a-deployment-with-a-rather-long-name-indeed"}},
		{Options{Output: "table"}, []string{"spec.replicas,spec.template.spec.contai…"}},
		{Options{Output: "table", NoHeaders: true}, []string{"update"}},
		{Options{Output: "name"}, []string{"deployment.apps/a-deployment-with-a-rather-long-name-indeed\n"}},
		{Options{Output: "yaml"}, []string{"---\n", "name: a-deployment-with-a-rather-long-name-indeed\n", "type: update\n"}},
	} {
		var out bytes.Buffer
		tc.o.Out, tc.o.Location = &out, time.UTC
		p := NewPrinter(tc.o)
		if err := p.Header(); err != nil {
			t.Fatal(err)
		}
		if err := p.Print(pl); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("-o %s: lacks %q:\n%s", tc.o.Output, w, out.String())
			}
		}
		if tc.o.NoHeaders && strings.Contains(out.String(), "EVENT") {
			t.Errorf("--no-headers printed a header:\n%s", out.String())
		}
	}
}

// -o wide's ACTOR is who made the change: the manager, with (Apply) for a
// server-side apply; "-" when not known (an add).
func TestWideActor(t *testing.T) {
	for _, tc := range []struct {
		actor *event.Actor
		want  string
	}{
		{&event.Actor{Manager: "kubectl-patch", Operation: "Update"}, "kubectl-patch"},
		{&event.Actor{Manager: "kube-controller-manager", Operation: "Update", Subresource: "status"}, "kube-controller-manager"},
		{&event.Actor{Manager: "my-applier", Operation: "Apply"}, "my-applier(Apply)"},
		{nil, "-"},
	} {
		var out bytes.Buffer
		p := NewPrinter(Options{Output: "wide", Out: &out, Location: time.UTC})
		pl := &event.Payload{Type: event.Update, Resource: event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap"},
			Namespace: "prod", Name: "c", UID: "u-1", ResourceVersion: "42", Actor: tc.actor, Object: json.RawMessage(`{}`), Time: "2026-11-29T12:00:00.000Z"}
		if err := p.Header(); err != nil {
			t.Fatal(err)
		}
		if err := p.Print(pl); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		h, row := strings.Fields(lines[0]), strings.Fields(lines[1])
		if h[len(h)-1] != "ACTOR" || row[len(row)-1] != tc.want {
			t.Errorf("ACTOR %q, want %q:\n%s", row[len(row)-1], tc.want, out.String())
		}
	}
}

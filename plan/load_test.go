package plan

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/config"
)

var update = flag.Bool("update", false, "rewrite the .want files of testdata/invalid-*.yaml from the current output")

// Every testdata/invalid-NAME.yaml has its expected problems, one per line with
// file name and line, in testdata/invalid-NAME.want; all of them, and no others,
// must be reported.
func TestInvalidConfigs(t *testing.T) {
	t.Setenv("DYNWATCH_TEST_UNSET_VAR", "")
	os.Unsetenv("DYNWATCH_TEST_UNSET_VAR")
	files, err := filepath.Glob("testdata/invalid-*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/invalid-*.yaml: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := Load(f)
			var ps config.Problems
			if !errors.As(err, &ps) {
				t.Fatalf("Load: want Problems, got %v", err)
			}
			got := ps.Error() + "\n"
			wantFile := strings.TrimSuffix(f, ".yaml") + ".want"
			if *update {
				if err := os.WriteFile(wantFile, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(wantFile)
			if err != nil {
				t.Fatalf("%v (run go test ./plan -run TestInvalidConfigs -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("problems differ\n got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestExampleConfigLoads(t *testing.T) {
	t.Setenv("HOOK_TOKEN", "example-token")
	f, err := Load("../config.example.yaml")
	if err != nil {
		t.Fatalf("config.example.yaml: %v", err)
	}
	if len(f.Rules) == 0 || len(f.Config.Actions) == 0 {
		t.Fatalf("config.example.yaml has %d rules and %d actions", len(f.Rules), len(f.Config.Actions))
	}
}

func TestDefaults(t *testing.T) {
	f, err := Parse("t.yaml", []byte(`
apiVersion: dynwatch/v1alpha1
defaults: {namespaces: [b, a]}
actions:
  - name: hook
    webhook: {url: "http://127.0.0.1:1/x"}
rules:
  - name: r
    resources: [{kind: ConfigMap}]
    actions: [hook]
`))
	if err != nil {
		t.Fatal(err)
	}
	a := f.Config.Actions[0]
	// The documented defaults, as literals: a changed constant must fail here.
	checks := []struct {
		name      string
		got, want any
	}{
		{"queueSize", a.QueueSize, 10000},
		{"concurrency", a.Concurrency, 4},
		{"method", a.Webhook.Method, "POST"},
		{"timeout", a.Webhook.Timeout.Std(), 10 * time.Second},
		{"retry.max", *a.Webhook.Retry.Max, 10},
		{"retry.initialBackoff", a.Webhook.Retry.InitialBackoff.Std(), time.Second},
		{"retry.maxBackoff", a.Webhook.Retry.MaxBackoff.Std(), 5 * time.Minute},
		{"shutdownGrace", f.Config.ShutdownGrace.Std(), 30 * time.Second},
		{"onStart without state", f.Rules[0].OnStart, config.OnStartNone},
		{"namespaces from defaults, sorted", strings.Join(f.Rules[0].Namespaces, ","), "a,b"},
		{"redact default kind", f.Config.Redact[0].Kind, "Secret"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// A rule reading health records what the config's health reads: a kind's own
// CEL's paths too, so that an old object rebuilt from a record has the
// health it had.
func TestHealthPathsOfTheConfig(t *testing.T) {
	f, err := Parse("c.yaml", []byte(`apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: r, resources: [{kind: ConfigMap}], when: [{path: health.status, op: eq, value: Failed}], actions: [out]}
health:
  - {kind: ConfigMap, cel: 'object.data.mode == "on" ? "Current" : "Failed"'}
`))
	if err != nil {
		t.Fatal(err)
	}
	ps := f.Rule("r").Paths()
	if !slices.Contains(ps, "data.mode") || !slices.Contains(ps, "status") {
		t.Errorf("Paths = %v, want the CEL's data.mode and the generic status", ps)
	}
}

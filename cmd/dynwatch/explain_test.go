package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/offline"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/rules"
)

// Every `test --explain` fixture, as an add and as an update from every other
// fixture, from every origin an event can have, gets the same verdict from the
// firing function that run uses and from Explain, and Explain's verdict is the
// conjunction of the steps it shows.
func TestExplainAgreesWithDecide(t *testing.T) {
	file, err := plan.Load("testdata/rules-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var objs [][]byte
	for _, pattern := range []string{"testdata/deploy-*.json", "testdata/deploy-*.yaml"} {
		names, _ := filepath.Glob(pattern)
		for _, name := range names {
			bs, err := offline.ReadObjects(name)
			if err != nil {
				t.Fatal(err)
			}
			objs = append(objs, bs...)
		}
	}
	if len(objs) < 3 {
		t.Fatalf("found %d fixtures", len(objs))
	}
	added := rules.Added{1: {"scaled-from-running": true}, 2: {"other": true}}
	origins := []struct {
		origin event.Origin
		epoch  uint64
	}{{event.Live, 0}, {event.InitialList, 0}, {event.InitialList, 1}, {event.InitialList, 2}, {event.Relist, 0}, {event.Replay, 0}}
	fired := 0
	for _, rule := range file.Rules {
		for i, obj := range objs {
			for j := -1; j < len(objs); j++ {
				typ, old := event.Add, []byte(nil)
				if j >= 0 {
					typ, old = event.Update, objs[j]
				}
				for _, o := range origins {
					ev := event.New(typ, offline.ResourceOf(obj, rule), obj, old, time.Now())
					ev.Origin, ev.Epoch = o.origin, o.epoch
					fires := rule.Decide(ev, added)
					verdict, steps := rule.Explain(ev, added, file.Redactor)
					all := !slices.ContainsFunc(steps, func(s rules.Step) bool { return !s.Held })
					if fires != verdict || verdict.Fires != all || len(steps) == 0 {
						t.Errorf("rule %s, new %d, old %d, origin %s/%d: Decide %+v, Explain %+v, steps all held %v: %+v",
							rule.Name, i, j, o.origin, o.epoch, fires, verdict, all, steps)
					}
					if fires.Fires {
						fired++
					}
				}
			}
		}
	}
	if fired == 0 {
		t.Error("no combination fired: the fixtures do not exercise a firing rule")
	}
}

// `test --explain` shows what it found as every output does: a Secret's data
// redacted, in the checks as in the payload.
func TestExplainRedacts(t *testing.T) {
	code, stdout, stderr := runCLI(t, "test", "--config", "testdata/secret-rules.yaml", "--rule", "password-changed",
		"--old", "testdata/secret-old.yaml", "--new", "testdata/secret-new.yaml", "--explain")
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	for _, leak := range []string{"T0xEU0VOVElORUw=", "TkVXU0VOVElORUw="} {
		if strings.Contains(stdout, leak) {
			t.Errorf("output shows a Secret value %s:\n%s", leak, stdout)
		}
	}
	for _, want := range []string{`when[0] data.password exists`, `found "<redacted>": holds`, `data: {"password":"<redacted>"} -> {"password":"<redacted>"}`, `"password": "<redacted>"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

// Real CRDs' shapes, offline: nested lists from two #, an empty query result,
// and durations in Go's and Prometheus' forms.
func TestTestCommandOnCRDShapes(t *testing.T) {
	tests := []struct {
		rule, file string
		code       int
		contains   string
	}{
		{"critical-alerts", "testdata/prometheusrule.yaml", exitOK, `when[0] spec.groups.#.rules.#.labels.severity contains critical found [["critical","warning"],["critical"]]: holds`},
		{"no-info-alerts", "testdata/prometheusrule.yaml", exitOK, `found [[],[]]: holds`},
		{"fast-scrape", "testdata/servicemonitor.yaml", exitOK, `when[0] spec.endpoints.#.interval lt 10s found ["30s","7s"]: holds`},
		{"short-certificates", "testdata/certificate.yaml", exitFailure, `when[0] spec.duration lt 30d found "2160h": does NOT hold`},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "test", "--config", "testdata/crd-rules.yaml", "--rule", tt.rule, "--new", tt.file, "--explain")
			if code != tt.code {
				t.Errorf("exit %d, want %d: %s%s", code, tt.code, stdout, stderr)
			}
			if !strings.Contains(strings.Join(strings.Fields(stdout), " "), tt.contains) {
				t.Errorf("output lacks %q:\n%s", tt.contains, stdout)
			}
		})
	}
}

// tail's filter errors speak in flag terms, before anything connects.
func TestTailErrorsInFlagTerms(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--columns", "size=spec..size"}, `--columns size=spec..size: path "spec..size" has an empty component`},
		{[]string{"--where", `spec.x =~ \Qfoo`}, `--where "spec.x =~ \\Qfoo": bad regular expression`},
		{[]string{"--where-cel", "object.spec.x +"}, `--where-cel "object.spec.x +": CEL:`},
		{[]string{"--where", "spec.size => 3"}, `after the path "spec.size" comes "=>", which is not an operator`},
	} {
		code, _, stderr := runCLI(t, append([]string{"tail", "cm", "--kubeconfig", "/nonexistent"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d\n%s", tc.args, code, stderr)
		}
	}
}

// test evaluates as run does: the rule's resources, a missing namespace, every
// document of a file and every item of a List.
func TestTestCommandIsExact(t *testing.T) {
	run := func(file string) (int, string) {
		code, stdout, stderr := runCLI(t, "test", "--config", "testdata/exact-rules.yaml", "--rule", "big", "--new", file, "--explain")
		return code, stdout + stderr
	}
	if code, out := run("testdata/configmap-big.yaml"); code != exitFailure || !strings.Contains(out, "rule big does not select ConfigMap objects") {
		t.Errorf("a ConfigMap against a Deployment rule: exit %d\n%s", code, out)
	}
	if code, out := run("testdata/deploy-no-namespace.yaml"); code != exitFailure || !strings.Contains(out, `namespaces [prod]                                  found "": does NOT hold`) {
		t.Errorf("a Deployment without a namespace: exit %d\n%s", code, out)
	}
	code, out := run("testdata/multi.yaml")
	if code != exitFailure || strings.Count(out, "--- object") != 3 || strings.Count(out, "fires on this add") != 2 || !strings.Contains(out, "rule big does not fire on this add") {
		t.Errorf("three objects, two firing: exit %d\n%s", code, out)
	}
}

// test pairs --old and --new as run sees a change: another uid under the name
// is a delete and an add; the same object at one resourceVersion is a resync,
// which fires nothing; an edited copy, or objects without a version or uid
// (written by hand), are an update; and two objects of different names or
// groups are no change of one object at all.
func TestTestCommandPairsAsRunDoes(t *testing.T) {
	run := func(rule, old, new string) (int, string, string) {
		cfg := "testdata/rules-test.yaml"
		if rule == "big" {
			cfg = "testdata/exact-rules.yaml"
		}
		return runCLI(t, "test", "--config", cfg, "--rule", rule, "--old", old, "--new", new)
	}
	code, out, _ := run("scaled-from-running", "testdata/deploy-old.yaml", "testdata/deploy-resync.yaml")
	if code != exitFailure || !strings.Contains(out, "--old and --new are the same object at one resourceVersion (10): to run that is a resync, which fires no rule") || strings.Contains(out, "payload") {
		t.Errorf("a resync: exit %d\n%s", code, out)
	}
	// A copy of the object edited by hand keeps its resourceVersion: it is
	// tested as the update it stands for.
	code, out, _ = run("scaled-from-running", "testdata/deploy-old.yaml", "testdata/deploy-edited.yaml")
	if code != exitOK || !strings.Contains(out, "fires on this update") || strings.Contains(out, "resync") {
		t.Errorf("an edited copy: exit %d\n%s", code, out)
	}
	// Another uid under the name is a delete and an add, whatever the
	// resourceVersions say (run checks the uids first).
	code, out, _ = run("big", "testdata/deploy-old.yaml", "testdata/deploy-recreated-same-rv.yaml")
	if code != exitOK || !strings.Contains(out, "different uids (u-1, u-2)") || !strings.Contains(out, "rule big fires on this add") || strings.Contains(out, "resync") {
		t.Errorf("re-created, one resourceVersion: exit %d\n%s", code, out)
	}
	code, out, _ = run("scaled-from-running", "testdata/deploy-old.yaml", "testdata/deploy-recreated.yaml")
	if code != exitFailure || !strings.Contains(out, "different uids (u-1, u-2): run sees the old object deleted and the new one added") ||
		!strings.Contains(out, "does not fire on this delete") || !strings.Contains(out, "does not fire on this add") || strings.Contains(out, "this update") {
		t.Errorf("re-created under the name, an update rule: exit %d\n%s", code, out)
	}
	code, out, _ = run("big", "testdata/deploy-old.yaml", "testdata/deploy-recreated.yaml")
	if code != exitOK || !strings.Contains(out, "rule big does not fire on this delete") || !strings.Contains(out, "rule big fires on this add; payload:") || !strings.Contains(out, `"uid": "u-2"`) {
		t.Errorf("re-created under the name, a rule on every event: exit %d\n%s", code, out)
	}
	code, out, _ = run("scaled-from-running", "testdata/deploy-old-bare.yaml", "testdata/deploy-new-bare.yaml")
	if code != exitOK || !strings.Contains(out, "fires on this update") {
		t.Errorf("objects without resourceVersion or uid: exit %d\n%s", code, out)
	}
	code, _, stderr := run("scaled-from-running", "testdata/deploy-old.yaml", "testdata/deploy-other-name.yaml")
	if code != exitUsage || !strings.Contains(stderr, "object 1: --old is Deployment.apps prod/api and --new Deployment.apps prod/web; an update is of one object") {
		t.Errorf("two names: exit %d\n%s", code, stderr)
	}
	code, _, stderr = run("scaled-from-running", "testdata/deploy-old.yaml", "testdata/deploy-other-group.yaml")
	if code != exitUsage || !strings.Contains(stderr, "--old is Deployment.apps prod/api and --new Deployment.example.com prod/api") {
		t.Errorf("two groups: exit %d\n%s", code, stderr)
	}
}

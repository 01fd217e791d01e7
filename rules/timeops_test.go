package rules

import (
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
)

// olderThan holds from the time plus the duration on, newerThan until then;
// HoldsAt's recheck is exactly that moment while it is ahead, and zero once
// passed. A missing path or a value that is no time holds neither.
func TestOlderAndNewerThan(t *testing.T) {
	rs := compile(t, `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: older, resources: [{kind: ConfigMap}], when: [{path: metadata.creationTimestamp, op: olderThan, value: 15m}], actions: [out]}
  - {name: newer, resources: [{kind: ConfigMap}], when: [{path: metadata.creationTimestamp, op: newerThan, value: 15m}], actions: [out]}
  - {name: days, resources: [{kind: ConfigMap}], when: [{path: metadata.creationTimestamp, op: olderThan, value: 1d}], actions: [out]}
  - {name: missing, resources: [{kind: ConfigMap}], when: [{path: metadata.deletionTimestamp, op: newerThan, value: 15m}], actions: [out]}
  - {name: notime, resources: [{kind: ConfigMap}], when: [{path: data.bad, op: newerThan, value: 15m}], actions: [out]}
  - {name: andplain, resources: [{kind: ConfigMap}], when: [{path: data.bad, op: eq, value: "no"}, {path: metadata.creationTimestamp, op: olderThan, value: 15m}], actions: [out]}
`)
	created, flip := t0, t0.Add(15*time.Minute)
	ev := event.New(event.Add, cmRes, cm("yes", 1), nil, time.Time{})
	for _, tc := range []struct {
		rule    string
		at      time.Time
		holds   bool
		recheck time.Time
	}{
		{"older", created.Add(10 * time.Minute), false, flip},
		{"older", flip.Add(-time.Nanosecond), false, flip},
		{"older", flip, true, time.Time{}},
		{"older", flip.Add(time.Hour), true, time.Time{}},
		{"newer", created.Add(10 * time.Minute), true, flip},
		{"newer", flip, false, time.Time{}},
		{"days", created.Add(23 * time.Hour), false, created.Add(24 * time.Hour)},
		{"days", created.Add(24 * time.Hour), true, time.Time{}},
		{"missing", created, false, time.Time{}},
		{"notime", created, false, time.Time{}},
		// A plain condition that fails waits for an event: no recheck.
		{"andplain", created, false, time.Time{}},
	} {
		r := ruleNamed(t, rs, tc.rule)
		holds, recheck := r.HoldsAt(ev, tc.at)
		if holds != tc.holds || !recheck.Equal(tc.recheck) {
			t.Errorf("%s at %v: HoldsAt %v, recheck %v; want %v, %v", tc.rule, tc.at, holds, recheck, tc.holds, tc.recheck)
		}
		ev.Time = tc.at
		if got := r.Decide(ev, nil).Fires; got != tc.holds {
			t.Errorf("%s at the event's time %v: Decide %v, want %v", tc.rule, tc.at, got, tc.holds)
		}
		if !r.Timed() {
			t.Errorf("%s reads time, but is not Timed", tc.rule)
		}
	}
	plain := compile(t, "apiVersion: dynwatch/v1alpha1\nactions: [{name: out, log: {}}]\nrules: [{name: p, resources: [{kind: ConfigMap}], when: [{path: data.bad, op: eq, value: x}, {cel: \"object.data.bad == 'x'\"}], actions: [out]}]\n")
	if plain[0].Timed() {
		t.Error("a rule that reads no time is Timed")
	}
}

func ruleNamed(t *testing.T, rs []*Rule, name string) *Rule {
	t.Helper()
	for _, r := range rs {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no rule %s", name)
	return nil
}

// The evaluation's now is the Evaluator's Now, else the event's Time: never
// the clock inside an operator.
func TestEvaluatorNow(t *testing.T) {
	rs := compile(t, `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules: [{name: older, resources: [{kind: ConfigMap}], when: [{path: metadata.creationTimestamp, op: olderThan, value: 15m}], actions: [out]}]
`)
	ev := event.New(event.Add, cmRes, cm("yes", 1), nil, t0.Add(time.Minute))
	if ms := (&Evaluator{}).Evaluate(rs, ev); len(ms) != 0 {
		t.Error("at the event's time, 1m after creation: fired")
	}
	now := func() time.Time { return t0.Add(time.Hour) }
	if ms := (&Evaluator{Now: now}).Evaluate(rs, ev); len(ms) != 1 {
		t.Error("at Now, 1h after creation: did not fire")
	}
}

// CEL's now() is the evaluation's now, as a timestamp; a rule that calls it
// is timed, and asked again celRecheck later.
func TestCELNow(t *testing.T) {
	rs := compile(t, `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules: [{name: cel, resources: [{kind: ConfigMap}], when: [{cel: "timestamp(object.metadata.creationTimestamp) < now() - duration('15m')"}], actions: [out]}]
`)
	r := rs[0]
	ev := event.New(event.Add, cmRes, cm("yes", 1), nil, time.Time{})
	for _, tc := range []struct {
		at    time.Duration
		holds bool
	}{{10 * time.Minute, false}, {15 * time.Minute, false}, {16 * time.Minute, true}} {
		holds, recheck := r.HoldsAt(ev, t0.Add(tc.at))
		if holds != tc.holds || !recheck.Equal(t0.Add(tc.at+celRecheck)) {
			t.Errorf("at +%v: %v, recheck %v; want %v, %v", tc.at, holds, recheck, tc.holds, t0.Add(tc.at+celRecheck))
		}
	}
	if !r.Timed() || r.CELErrors() != 0 {
		t.Errorf("Timed %v, CEL errors %d", r.Timed(), r.CELErrors())
	}
	if _, ps := Compile(mustParse(t, "rules: [{name: c, resources: [{kind: ConfigMap}], when: [{cel: \"now() > 3\"}], actions: [out]}]")); len(ps) == 0 || !strings.Contains(ps.Error(), "when[0].cel: CEL:") {
		t.Errorf("now() compared with an int: %v", ps)
	}
}

// An always rule whose condition reads time fires once, at the timer, when
// the time passes; events fire it as they always do, and the timer does not
// fire it again.
func TestAlwaysRuleFiresOnceWhenTheTimePasses(t *testing.T) {
	c := newClock(t, `  - {name: old, resources: [{kind: ConfigMap}], when: [{path: metadata.creationTimestamp, op: olderThan, value: 15m}], actions: [out]}
`)
	c.want("add, too new", c.change(event.Add, time.Minute, "yes"), "")
	due, ms := c.timer("old", "yes")
	c.want("timer", ms, "old:-")
	if !due.Equal(t0.Add(15*time.Minute)) || ms[0].Payload.Due != "2026-12-07T20:15:00.000Z" || ms[0].Payload.Since != "2026-12-07T20:15:00.000Z" {
		t.Errorf("due %v, payload due %q, since %q", due, ms[0].Payload.Due, ms[0].Payload.Since)
	}
	if due, ms := c.timer("old", "yes"); !due.IsZero() || len(ms) > 0 {
		t.Errorf("a second timer, due %v, fired %q", due, fired(ms))
	}
	c.want("update", c.change(event.Update, 20*time.Minute, "yes"), "old:-")
}

// Explain shows what an olderThan or newerThan found: the time, when the
// answer changes, and now.
func TestExplainShowsTheTime(t *testing.T) {
	rs := compile(t, `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: older, resources: [{kind: ConfigMap}], when: [{path: metadata.creationTimestamp, op: olderThan, value: 15m}], actions: [out]}
  - {name: newer, resources: [{kind: ConfigMap}], when: [{path: data.bad, op: newerThan, value: 1h}], actions: [out]}
  - {name: cel, resources: [{kind: ConfigMap}], when: [{cel: "now() > timestamp(object.metadata.creationTimestamp)"}], actions: [out]}
`)
	ev := event.New(event.Add, cmRes, cm("yes", 1), nil, t0.Add(20*time.Minute))
	for _, tc := range []struct{ rule, check, found string }{
		{"older", "when[0] metadata.creationTimestamp olderThan 15m", `"2026-12-07T20:00:00Z" (older than 15m from 2026-12-07T20:15:00Z; now 2026-12-07T20:20:00Z)`},
		{"newer", "when[0] data.bad newerThan 1h", `"yes" (not an RFC 3339 time)`},
		{"cel", "when[0] cel now() > timestamp(object.metadata.creationTimestamp)", "the objects (CEL), now() 2026-12-07T20:20:00Z"},
	} {
		v, steps := ruleNamed(t, rs, tc.rule).Explain(ev, nil, nil)
		last := steps[len(steps)-1]
		if last.Check != tc.check || last.Found != tc.found {
			t.Errorf("%s: step %q found %q\nwant %q found %q", tc.rule, last.Check, last.Found, tc.check, tc.found)
		}
		if v.Fires != (tc.rule != "newer") {
			t.Errorf("%s: fires %v", tc.rule, v.Fires)
		}
	}
}

// mustParse parses a config of one log action, out, and the given rules.
func mustParse(t *testing.T, rules string) *config.File {
	t.Helper()
	f, err := config.Parse("t.yaml", []byte("apiVersion: dynwatch/v1alpha1\nactions: [{name: out, log: {}}]\n"+rules+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

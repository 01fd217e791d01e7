package config

import (
	"testing"
	"time"
)

// for and keepFiringFor: each needs a fire that has the transition it
// delays, neither is negative, and neither goes with changed; each problem
// at its line and path.
func TestWaitProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, rule, want string }{
		{"for on always", `for: 5m`, `w.yaml:4: rules[0].for: needs fire: enter or edges (it delays enter; this rule's fire is always)`},
		{"for on exit", `fire: exit, for: 5m`, `w.yaml:4: rules[0].for: needs fire: enter or edges (it delays enter; this rule's fire is exit)`},
		{"keepFiringFor on enter", `fire: enter, keepFiringFor: 1m`, `w.yaml:4: rules[0].keepFiringFor: needs fire: exit or edges (it delays exit; this rule's fire is enter)`},
		{"keepFiringFor on always", `keepFiringFor: 1m`, `w.yaml:4: rules[0].keepFiringFor: needs fire: exit or edges (it delays exit; this rule's fire is always)`},
		{"negative for", `fire: enter, for: -5s`, `w.yaml:4: rules[0].for: must not be negative, got "-5s"`},
		{"negative keepFiringFor", `fire: edges, keepFiringFor: -1m`, `w.yaml:4: rules[0].keepFiringFor: must not be negative, got "-1m"`},
		{"changed with for", `fire: enter, for: 5m, changed: [spec.replicas]`, `w.yaml:4: rules[0].changed: changed cannot be combined with for or keepFiringFor: a wait ends with no update, on the object as it stands, so there is no change to compare (put the paths in when instead)`},
		{"changed with keepFiringFor", `fire: edges, keepFiringFor: 5m, changed: [spec.replicas]`, `w.yaml:4: rules[0].changed: changed cannot be combined with for or keepFiringFor: a wait ends with no update, on the object as it stands, so there is no change to compare (put the paths in when instead)`},
		{"unknown fire: no second problem", `fire: enterr, for: 5m`, `w.yaml:4: rules[0].fire: unknown fire "enterr", did you mean "enter"? (want one of always, enter, exit, edges)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("w.yaml", []byte(waitsConfig(tc.rule)))
			if err == nil || err.Error() != tc.want {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}

func waitsConfig(rule string) string {
	return "apiVersion: dynwatch/v1alpha1\nactions: [{name: a, log: {}}]\nrules:\n  - {name: r, resources: [{kind: ConfigMap}], actions: [a], " + rule + "}\n"
}

// What the file gives is kept; left out, a wait is none; zero is allowed
// with any fire (it is the default).
func TestWaitDefaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rule          string
		for_, keepFor time.Duration
	}{
		{`fire: edges, for: 5m, keepFiringFor: 1h`, 5 * time.Minute, time.Hour},
		{`fire: enter`, 0, 0},
		{`for: 0s, keepFiringFor: 0s`, 0, 0},
		{`fire: enter, for: 30s, changed: []`, 30 * time.Second, 0},
	} {
		f, err := Parse("w.yaml", []byte(waitsConfig(tc.rule)))
		if err != nil {
			t.Errorf("%s: %v", tc.rule, err)
			continue
		}
		rs := f.Config.Rules[0]
		if rs.For.Std() != tc.for_ || rs.KeepFiringFor.Std() != tc.keepFor {
			t.Errorf("%s: for %v, keepFiringFor %v; want %v, %v", tc.rule, rs.For.Std(), rs.KeepFiringFor.Std(), tc.for_, tc.keepFor)
		}
	}
}

package config

import (
	"reflect"
	"testing"
	"time"
)

// A group or rateLimit that leaves keys out gets Alertmanager's timings and a
// burst of one; what the file gives stays; an action without them has none.
func TestGroupAndRateLimitDefaults(t *testing.T) {
	t.Parallel()
	f, err := Parse("g.yaml", []byte(`apiVersion: dynwatch/v1alpha1
actions:
  - {name: d, log: {}, group: {}, rateLimit: {perSecond: 2}}
  - {name: s, log: {}, group: {by: [namespace, rule], wait: 1s, interval: 2m, max: 7}, rateLimit: {perSecond: 0.5, burst: 3}}
  - {name: none, log: {}}
rules: [{name: r, resources: [{kind: ConfigMap}], actions: [d, s, none]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	d, s, none := &f.Config.Actions[0], &f.Config.Actions[1], &f.Config.Actions[2]
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"group.by default", len(d.Group.By), 0},
		{"group.wait default", d.Group.Wait.Std(), DefaultGroupWait},
		{"group.interval default", d.Group.Interval.Std(), DefaultGroupInterval},
		{"group.max default", *d.Group.Max, DefaultGroupMax},
		{"rateLimit.burst default", *d.RateLimit.Burst, DefaultRateLimitBurst},
		{"rateLimit.perSecond", d.RateLimit.PerSecond, 2.0},
		{"group.wait", s.Group.Wait.Std(), time.Second},
		{"group.interval", s.Group.Interval.Std(), 2 * time.Minute},
		{"group.max", *s.Group.Max, 7},
		{"rateLimit.perSecond fraction", s.RateLimit.PerSecond, 0.5},
		{"rateLimit.burst", *s.RateLimit.Burst, 3},
		{"no group", none.Group == nil, true},
		{"no rateLimit", none.RateLimit == nil, true},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if !reflect.DeepEqual(s.Group.By, []string{"namespace", "rule"}) {
		t.Errorf("group.by = %v", s.Group.By)
	}
}

// Each wrong group or rateLimit key is reported at its own line and path
// (the full list is plan/testdata/invalid-group.yaml).
func TestGroupProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, action, want string }{
		{"unknown label, nearest suggested", `group: {by: [nmae]}`, `g.yaml:3: actions[0].group.by[0]: unknown label "nmae", did you mean "name"? (want any of rule, namespace, name, kind, resource, cluster, type, transition)`},
		{"duplicate label", `group: {by: [kind, kind]}`, `g.yaml:3: actions[0].group.by[1]: duplicate label "kind" (first at by[0])`},
		{"wait 0", `group: {wait: 0s}`, `g.yaml:3: actions[0].group.wait: must be positive, got 0s`},
		{"interval 0", `group: {interval: 0s}`, `g.yaml:3: actions[0].group.interval: must be positive, got 0s`},
		{"max 0", `group: {max: 0}`, `g.yaml:3: actions[0].group.max: must be at least 1, got 0`},
		{"rate 0", `rateLimit: {perSecond: 0}`, `g.yaml:3: actions[0].rateLimit.perSecond: required: deliveries per second, more than 0 (0.1: one every 10s)`},
		{"rate missing", `rateLimit: {burst: 2}`, `g.yaml:3: actions[0].rateLimit.perSecond: required: deliveries per second, more than 0 (0.1: one every 10s)`},
		{"rate negative", `rateLimit: {perSecond: -2}`, `g.yaml:3: actions[0].rateLimit.perSecond: must be more than 0, got -2`},
		{"rate below one a day", `rateLimit: {perSecond: 0.00001}`, `g.yaml:3: actions[0].rateLimit.perSecond: must be at least one a day (1.16e-05), got 1e-05`},
		{"rate not a number", `rateLimit: {perSecond: fast}`, `g.yaml:3: actions[0].rateLimit.perSecond: want a number, got the string "fast"`},
		{"burst 0", `rateLimit: {perSecond: 1, burst: 0}`, `g.yaml:3: actions[0].rateLimit.burst: must be at least 1, got 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("g.yaml", []byte("apiVersion: dynwatch/v1alpha1\nactions:\n  - {name: a, log: {}, "+tc.action+"}\nrules: [{name: r, resources: [{kind: ConfigMap}], actions: [a]}]\n"))
			if err == nil || err.Error() != tc.want {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}

package config

import (
	"errors"
	"strings"
	"testing"
)

func TestProblemsNameLineAndPath(t *testing.T) {
	_, err := Parse("t.yaml", []byte(`apiVersion: dynwatch/v1alpha1
actions:
  - name: out
    log: {}
    queueSize: many
rules:
  - name: r
    resources: [{kind: ConfigMap}]
    onStart: later
    actions: [out, nope]
    colour: red
`))
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("want Problems, got %v", err)
	}
	want := []string{
		`t.yaml:5: actions[0].queueSize: want a whole number, got the string "many"`,
		`t.yaml:9: rules[0].onStart: unknown onStart "later" (want one of diff, all, none)`,
		`t.yaml:10: rules[0].actions[1]: undefined action "nope" (define it under actions)`,
		`t.yaml:11: rules[0].colour: unknown field "colour"`,
	}
	got := ps.Error()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("problems lack %q:\n%s", w, got)
		}
	}
	if len(ps) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(ps), len(want), got)
	}
}

func TestRetryDefaultsAppliedOnce(t *testing.T) {
	f, err := Parse("t.yaml", []byte(`apiVersion: dynwatch/v1alpha1
actions:
  - {name: out, log: {}}
  - {name: x, exec: {command: [/bin/true], retry: {max: 3}}}
rules: [{name: r, resources: [{kind: ConfigMap}], actions: [out, x]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	log, x := f.Config.Actions[0].RetryPolicy(), f.Config.Actions[1].RetryPolicy()
	if *log.Max != DefaultMaxRetries || log.MaxBackoff.Std() != DefaultMaxBackoff {
		t.Errorf("log retry = %+v", log)
	}
	if *x.Max != 3 || x.InitialBackoff.Std() != DefaultInitialBackoff {
		t.Errorf("exec retry = max %d initial %s", *x.Max, x.InitialBackoff.Std())
	}
	if f.Config.Actions[1].Kind() != "exec" {
		t.Errorf("kind = %q", f.Config.Actions[1].Kind())
	}
}

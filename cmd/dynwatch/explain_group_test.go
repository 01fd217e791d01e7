package main

import (
	"strings"
	"testing"
)

// test --explain says, for each action of a firing rule, the group the event
// would join (its by-labels, with the defaults the file left out) and the
// rate limit; plain test says neither.
func TestExplainSaysTheGroup(t *testing.T) {
	code, stdout, stderr := runCLI(t, "test", "--config", "testdata/group-rules.yaml", "--rule", "configs", "--new", "testdata/configmap-big.yaml", "--explain")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{
		`action chat groups by [rule namespace]: this event joins the group {rule="configs", namespace="prod"}, delivered 10s after its first event, then at most every 5m0s, 100 events a delivery at most`,
		`action chat is rate limited to 0.5 deliveries a second, bursts of 3: deliveries wait their turn, none is dropped`,
		`action audit delivers this event on its own (no group)`,
	} {
		if !strings.Contains(stdout, want+"\n") {
			t.Errorf("--explain does not say\n%s\n---\n%s", want, stdout)
		}
	}
	_, plain, _ := runCLI(t, "test", "--config", "testdata/group-rules.yaml", "--rule", "configs", "--new", "testdata/configmap-big.yaml")
	if strings.Contains(plain, "action chat") {
		t.Errorf("plain test speaks of actions:\n%s", plain)
	}
}

// check reports every wrong group and rateLimit key at its line.
func TestCheckGroupFields(t *testing.T) {
	code, stdout, stderr := runCLI(t, "check", "--config", "../../plan/testdata/invalid-group.yaml")
	out := stdout + stderr
	if code == exitOK {
		t.Fatalf("exit 0\n%s", out)
	}
	for _, want := range []string{
		`invalid-group.yaml:6: actions[0].group.by[0]: unknown label "namespce", did you mean "namespace"?`,
		`invalid-group.yaml:7: actions[0].group.wait: must be positive, got 0s`,
		`invalid-group.yaml:9: actions[0].group.max: must be at least 1, got 0`,
		`invalid-group.yaml:13: actions[1].rateLimit.perSecond: must be more than 0, got -1.5`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check does not say %s\n%s", want, out)
		}
	}
}

package watcher

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dynwatch/dynwatch/plan"
)

// A reload that edits a rule (its conditions, here) changes what is
// delivered: its log line names the rule, and does not say that nothing
// watched or delivered changed.
func TestReloadDiffNamesAnEditedRule(t *testing.T) {
	t.Parallel()
	file := func(v string) *plan.File {
		f, err := plan.Parse(t.Name()+".yaml", fmt.Appendf(nil, `apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], when: [{path: data.v, op: eq, value: %q}], actions: [out]}]
`, v))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	d := diffFiles(file("a"), file("b"), func(string) bool { return true })
	line := fmt.Sprint(d.attrs(nil))
	if strings.Contains(line, "nothing that is watched or delivered") || !strings.Contains(line, "cms") {
		t.Errorf("the reload of an edited rule logs %s, want the rule named as changed", line)
	}
}

// A rule that only moves in the file (another is added above it) is not
// named as changed.
func TestReloadDiffIgnoresWhereARuleSits(t *testing.T) {
	t.Parallel()
	const rule = `
  - {name: cms, resources: [{group: "", resource: configmaps}], when: [{path: data.v, op: eq, value: "a"}], actions: [out]}
`
	parse := func(rules string) *plan.File {
		f, err := plan.Parse(t.Name()+".yaml", []byte("apiVersion: dynwatch/v1alpha1\nactions: [{name: out, log: {}}]\nrules:\n"+rules))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	prev := parse(rule)
	next := parse(`
  - {name: first, resources: [{group: "", resource: secrets}], actions: [out]}
` + rule)
	line := fmt.Sprint(diffFiles(prev, next, func(string) bool { return true }).attrs(nil))
	if strings.Contains(line, "rulesChanged") || !strings.Contains(line, "rulesAdded first") {
		t.Errorf("a rule that moved in the file: %s, want only the added rule", line)
	}
}

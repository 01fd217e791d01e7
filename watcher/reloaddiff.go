package watcher

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/plan"
)

// reloadDiff is what a reload changed, for its log line: an operator who edits
// the file sees what took effect, not only that something did.
type reloadDiff struct {
	rulesAdded, rulesRemoved, rulesEdit       []string
	actionsAdded, actionsRemoved, actionsEdit []string
	watchesBefore                             []dyninformer.Key
}

// diffFiles compares the rules and actions of the running file and the next;
// kept names the actions whose queues carry on unchanged.
func diffFiles(prev, next *plan.File, kept func(name string) bool) reloadDiff {
	var d reloadDiff
	d.rulesAdded, d.rulesRemoved = addedRemoved(ruleNames(prev), ruleNames(next))
	d.rulesEdit = editedRules(prev, next)
	d.actionsAdded, d.actionsRemoved = addedRemoved(actionNames(prev), actionNames(next))
	for _, a := range actionNames(next) {
		if slices.Contains(actionNames(prev), a) && !kept(a) {
			d.actionsEdit = append(d.actionsEdit, a)
		}
	}
	return d
}

// attrs are the log attributes of d, given the watches after the reload; an
// empty list is left out.
func (d reloadDiff) attrs(after []dyninformer.Key) []any {
	var before, now []string
	for _, k := range d.watchesBefore {
		before = append(before, k.String())
	}
	for _, k := range after {
		now = append(now, k.String())
	}
	watchesAdded, watchesRemoved := addedRemoved(before, now)
	var out []any
	for _, kv := range []struct {
		key  string
		list []string
	}{
		{"rulesAdded", d.rulesAdded}, {"rulesRemoved", d.rulesRemoved}, {"rulesChanged", d.rulesEdit},
		{"actionsAdded", d.actionsAdded}, {"actionsRemoved", d.actionsRemoved}, {"actionsChanged", d.actionsEdit},
		{"watchesAdded", watchesAdded}, {"watchesRemoved", watchesRemoved},
	} {
		if len(kv.list) > 0 {
			out = append(out, kv.key, strings.Join(kv.list, ","))
		}
	}
	if len(out) == 0 {
		out = append(out, "changed", "nothing that is watched or delivered")
	}
	return out
}

func ruleNames(f *plan.File) []string {
	var out []string
	for _, r := range f.Rules {
		out = append(out, r.Name)
	}
	return out
}

// editedRules names the rules of next that prev has under the same name with
// another spec. Specs are compared as YAML, so that where a rule sits in the
// file (the lines its values were read from) is no change.
func editedRules(prev, next *plan.File) []string {
	was := map[string]string{}
	for _, r := range prev.Config.Rules {
		was[r.Name] = specText(r)
	}
	var out []string
	for _, r := range next.Config.Rules {
		if old, ok := was[r.Name]; ok && old != specText(r) {
			out = append(out, r.Name)
		}
	}
	return out
}

func specText(r config.RuleSpec) string {
	b, err := yaml.Marshal(r)
	if err != nil {
		return "unreadable: " + err.Error() // not equal to any spec that is
	}
	return string(b)
}

func actionNames(f *plan.File) []string {
	var out []string
	for _, a := range f.Config.Actions {
		out = append(out, a.Name)
	}
	return out
}

// addedRemoved returns the names of next not in prev, and of prev not in next.
func addedRemoved(prev, next []string) (added, removed []string) {
	for _, n := range next {
		if !slices.Contains(prev, n) {
			added = append(added, n)
		}
	}
	for _, p := range prev {
		if !slices.Contains(next, p) {
			removed = append(removed, p)
		}
	}
	return added, removed
}

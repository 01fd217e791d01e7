package rules

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/fieldpath"
	"github.com/dynwatch/dynwatch/payload"
)

// Compile compiles every rule of a decoded config file, reporting the problems
// of selectors, label selectors and conditions at their lines. Rules with a
// problem are left out.
func Compile(f *config.File) ([]*Rule, config.Problems) {
	var out []*Rule
	var ps config.Problems
	for i := range f.Config.Rules {
		r, rps := compileRule(f, fmt.Sprintf("rules[%d]", i), &f.Config.Rules[i])
		ps = append(ps, rps...)
		if len(rps) == 0 {
			out = append(out, r)
		}
	}
	return out, ps
}

// CompileRule compiles one rule outside a config file, for commands that build
// rules from flags (tail).
func CompileRule(rs config.RuleSpec) (*Rule, error) {
	if rs.OnStart == "" {
		rs.OnStart = config.OnStartNone
	}
	f := &config.File{Path: "rule", Config: &config.Config{}}
	r, ps := compileRule(f, "", &rs)
	if len(ps) > 0 {
		return nil, ps
	}
	return r, nil
}

// compileRule compiles what config does not check itself: selectors, the label
// selector and the conditions. rs has been validated, and its defaults applied,
// by config.
func compileRule(f *config.File, p string, rs *config.RuleSpec) (*Rule, config.Problems) {
	var ps config.Problems
	errf := func(path, format string, args ...any) { ps = append(ps, f.Problem(path, format, args...)) }
	r := &Rule{Name: rs.Name, Actions: rs.Actions, OnStart: rs.OnStart, Fire: rs.Fire, LabelSelector: labels.Everything(), changed: rs.Changed}
	if r.Fire == "" {
		r.Fire = config.FireAlways
	}
	if len(rs.Namespaces) > 0 {
		r.Namespaces = slices.Compact(slices.Sorted(slices.Values(rs.Namespaces)))
	}
	for j, s := range rs.Resources {
		sel := discovery.Selector{Group: s.Group.Val, GroupSet: s.Group.Set, Version: s.Version, Resource: s.Resource, Kind: s.Kind}
		if err := sel.Validate(); err != nil {
			errf(fmt.Sprintf("%s.resources[%d]", p, j), "%v", err)
		}
		r.Selectors = append(r.Selectors, sel)
	}
	if rs.LabelSelector != "" {
		sel, err := labels.Parse(rs.LabelSelector)
		if err != nil {
			errf(join(p, "labelSelector"), "%v", err)
		} else {
			r.LabelSelector = sel
		}
	}
	if len(rs.On) == 0 {
		r.on = onAdd | onUpdate | onDelete
	}
	for _, t := range rs.On {
		r.on |= onBits[event.Type(t)] // config has reported unknown types
	}
	for j, cs := range rs.When {
		cond, err := compileCondition(cs, &r.celErrors)
		if err != nil {
			field := ""
			if ce, ok := err.(*condError); ok {
				field, err = "."+ce.field, ce.err
			}
			errf(fmt.Sprintf("%s.when[%d]%s", join(p, ""), j, field), "%v", err)
			continue
		}
		r.conds = append(r.conds, cond)
	}
	for j, cp := range rs.Changed {
		if err := fieldpath.Check(cp); err != nil {
			errf(fmt.Sprintf("%s.changed[%d]", join(p, ""), j), "%v", err)
		} else if root, _, ok := event.DerivedRoot(cp); ok && root == event.ActorRoot {
			errf(fmt.Sprintf("%s.changed[%d]", join(p, ""), j), "%s is who made the update, not a value of the object: there is no old one to compare (use it in when)", cp)
		}
	}
	r.forWait, r.keepFiringFor = duration(rs.For), duration(rs.KeepFiringFor)
	c, readsTime := r.readsTime()
	r.timed = readsTime || r.forWait > 0 || r.keepFiringFor > 0
	r.rolling = r.readsCELTime()
	// With for or keepFiringFor, config has said that changed cannot be.
	if readsTime && len(rs.Changed) > 0 && r.forWait == 0 && r.keepFiringFor == 0 {
		errf(join(p, "changed"), "changed cannot be combined with a condition that reads time (%s): its answer changes with no update, so there is no change to compare", c.name())
	}
	for _, name := range slices.Sorted(maps.Keys(rs.Fields)) {
		if err := fieldpath.Check(rs.Fields[name]); err != nil {
			errf(join(p, "fields."+name), "%v", err)
		}
		r.fields = append(r.fields, payload.Field{Name: name, Path: rs.Fields[name]})
	}
	r.readsHealth = r.ReadsHealth()
	return r, ps
}

// join prefixes a field of the rule with the rule's path, if it has one.
func join(p, field string) string {
	switch {
	case p == "":
		return field
	case field == "":
		return p
	}
	return p + "." + field
}

// duration is d, or 0 when the rule does not give it (a rule compiled
// outside a config file has had no defaults step).
func duration(d *config.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Std()
}

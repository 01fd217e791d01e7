package rules

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/tidwall/gjson"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/health"
	"github.com/dynwatch/dynwatch/payload"
)

type onMask uint8

const (
	onAdd onMask = 1 << iota
	onUpdate
	onDelete
)

var onBits = map[event.Type]onMask{event.Add: onAdd, event.Update: onUpdate, event.Delete: onDelete}

// Rule is a compiled rule: everything that can be checked or prepared at load
// time has been.
type Rule struct {
	Name string
	// Selectors choose the rule's resources from discovery.
	Selectors []discovery.Selector
	// Namespaces the rule watches, sorted; nil means all namespaces.
	Namespaces []string
	// LabelSelector filters objects by label; labels.Everything() when unset.
	LabelSelector labels.Selector
	// OnStart is diff, all or none, with the default resolved.
	OnStart string
	// Actions are the names of the actions the rule delivers to.
	Actions []string

	// Fire is always, enter, exit or edges, with the default resolved.
	Fire string

	on      onMask
	conds   []*condition
	changed []string
	fields  []payload.Field
	// readsHealth: see ReadsHealth, computed once.
	readsHealth bool
	// healthPaths are what health reads (SetHealthPaths); nil: the generic
	// rules' paths.
	healthPaths []string
	// celErrors counts CEL evaluations that failed (and counted as false).
	celErrors atomic.Uint64
}

// CELErrors returns how many CEL evaluations of the rule failed so far.
func (r *Rule) CELErrors() uint64 { return r.celErrors.Load() }

// Added names, per reload epoch, the rules that reload added: the objects that
// informers started by a reload list are new only to those rules.
type Added map[uint64]map[string]bool

// Step is one check of a rule on an event, with what was found and whether it held.
type Step struct {
	// Check names the check as the config writes it, e.g. "when[0] spec.replicas gt 5".
	Check string
	// Found is what the check saw.
	Found string
	Held  bool
}

// Verdict is the firing decision on one event.
type Verdict struct {
	// Fires is whether the event fires the rule.
	Fires bool
	// Transition is what a rule with fire: enter, exit or edges fired on
	// (enter or exit); "" for fire: always and when the rule does not fire.
	Transition string
}

// Decide decides whether the event fires the rule: the one place that decides
// it, for run, tail, test and the tests alike. The caller has already checked
// that the rule selects the event's resource.
func (r *Rule) Decide(ev *event.Event, added Added) Verdict {
	return r.decide(ev, added, nil)
}

// Explain is Decide recording every check it makes, in order, with what it
// found and whether it held; unlike Decide it goes on past a failed check, so
// that every check is shown. The verdict is Decide's by construction. What it
// found is read from the objects as red redacts them (nil: as they are), as
// every output shows them.
func (r *Rule) Explain(ev *event.Event, added Added, red *payload.Redactor) (Verdict, []Step) {
	rec := &recorder{obj: red.Redact(ev.Resource, ev.Object), old: red.Redact(ev.Resource, ev.OldObject), ev: ev}
	v := r.decide(ev, added, rec)
	return v, rec.steps
}

// recorder collects Explain's steps, and the objects it shows values from.
type recorder struct {
	steps    []Step
	obj, old []byte
	// ev shows what is derived of the objects (health.*), not in them.
	ev *event.Event
}

// Holds reports whether the event's object is in the rule's namespaces, matches
// its label selector and satisfies every condition: what audit asks of the
// objects that exist now, whatever the event type.
func (r *Rule) Holds(ev *event.Event) bool { return r.holds(ev, nil) }

// decide runs every check of the rule on ev; with rec it records each one and
// does not stop at the first that fails.
func (r *Rule) decide(ev *event.Event, added Added, rec *recorder) Verdict {
	ok := r.originAllows(ev, added, rec)
	if !ok && rec == nil {
		return Verdict{}
	}
	ok = r.onAllows(ev, rec) && ok
	if !ok && rec == nil {
		return Verdict{}
	}
	transition := ""
	if r.Fire == config.FireAlways {
		ok = r.holds(ev, rec) && ok
	} else {
		var fits bool
		transition, fits = r.transition(ev, rec)
		ok = fits && ok
	}
	if !ok && rec == nil {
		return Verdict{}
	}
	if ok = r.changedHolds(ev, rec) && ok; !ok {
		return Verdict{}
	}
	return Verdict{Fires: true, Transition: transition}
}

// transition evaluates the rule's conditions before and after the event (an
// add has no before, a delete no after) and reports the transition, if any,
// and whether the rule's fire wants it.
func (r *Rule) transition(ev *event.Event, rec *recorder) (string, bool) {
	before := ev.Type != event.Add && r.holds(ev.View(ev.Type == event.Update), nil)
	after := ev.Type != event.Delete && r.holds(ev.View(false), nil)
	t := ""
	switch {
	case after && !before:
		t = "enter"
	case before && !after:
		t = "exit"
	}
	fits := t != "" && (r.Fire == config.FireEdges || r.Fire == t)
	if rec != nil {
		r.holds(ev.View(false), rec) // the checks, on the new object
		found := fmt.Sprintf("before: %s, after: %s", verdict(before), verdict(after))
		if t != "" {
			found += " (" + t + ")"
		}
		record(rec, "fire: "+r.Fire, found, fits)
	}
	return t, fits
}

func verdict(held bool) string {
	if held {
		return "holds"
	}
	return "does not hold"
}

// originAllows decides by where the event came from: a relist after a version
// move fires nothing; an initial list fires only rules with onStart: all (and,
// after a reload, only the rules it added); a replay only onStart: diff. Why
// is put in words only when explaining: an initial list of 100 000 objects
// would otherwise format a sentence per object and rule.
func (r *Rule) originAllows(ev *event.Event, added Added, rec *recorder) bool {
	var held bool
	why := originPlain
	switch ev.Origin {
	case event.Live:
		return true // not recorded: the common case needs no step
	case event.Relist:
		why = originVersionMove
	case event.InitialList:
		switch {
		case ev.Epoch > 0 && !added[ev.Epoch][r.Name]:
			why = originNotAdded
		case r.OnStart != config.OnStartAll:
			why = originNotAll
		default:
			held = true
		}
	case event.Replay:
		held = r.OnStart == config.OnStartDiff
		why = originOnStart
	}
	if rec != nil {
		record(rec, "origin", r.originWords(ev.Origin, why), held)
	}
	return held
}

// Why originAllows decided as it did, for originWords.
const (
	originPlain       = iota // the origin says it all
	originVersionMove        // a relist after a version move
	originNotAdded           // an initial list of a reload that did not add the rule
	originNotAll             // an initial list, and onStart is not all
	originOnStart            // a replay, which onStart decides
)

// originWords is what originAllows found, in words (Explain).
func (r *Rule) originWords(o event.Origin, why int) string {
	found := o.String()
	switch why {
	case originVersionMove:
		found += " after a version move: nothing in it is new"
	case originNotAdded:
		found += " of a reload that did not add this rule"
	case originNotAll:
		found += fmt.Sprintf(" (onStart: %s fires on it only with all)", r.OnStart)
	case originOnStart:
		found += fmt.Sprintf(" (onStart: %s)", r.OnStart)
	}
	return found
}

func (r *Rule) onAllows(ev *event.Event, rec *recorder) bool {
	held := r.on&onBits[ev.Type] != 0
	if rec != nil {
		var on []string
		for _, t := range []event.Type{event.Add, event.Update, event.Delete} {
			if r.on&onBits[t] != 0 {
				on = append(on, string(t))
			}
		}
		record(rec, "on ["+strings.Join(on, ", ")+"]", string(ev.Type), held)
	}
	return held
}

func (r *Rule) holds(ev *event.Event, rec *recorder) bool {
	ok := true
	if r.Namespaces != nil {
		// A namespaced object without a namespace (an object file written
		// without one) is in none of the rule's namespaces.
		held := r.InNamespace(ev.Namespace) && (ev.Namespace != "" || !ev.Resource.Namespaced)
		record(rec, "namespaces ["+strings.Join(r.Namespaces, ", ")+"]", fmt.Sprintf("%q", ev.Namespace), held)
		if ok = held; !ok && rec == nil {
			return false
		}
	}
	if !r.LabelSelector.Empty() {
		held := r.LabelSelector.Matches(objectLabels(ev.Object))
		if rec != nil {
			// What it found is shown as redacted: a config may redact a label.
			record(rec, "labelSelector "+r.LabelSelector.String(), objectLabels(rec.obj).String(), held)
		}
		if ok = held && ok; !ok && rec == nil {
			return false
		}
	}
	for i, c := range r.conds {
		held := c.holds(ev)
		if rec != nil {
			check, found := c.explain(i, rec)
			record(rec, check, found, held)
		}
		if ok = held && ok; !ok && rec == nil {
			return false
		}
	}
	return ok
}

// changedHolds reports whether an update changed a value at one of the rule's
// changed paths; it holds for every other event, and when the rule has none.
func (r *Rule) changedHolds(ev *event.Event, rec *recorder) bool {
	if len(r.changed) == 0 {
		return true
	}
	if ev.Type != event.Update {
		record(rec, "changed ["+strings.Join(r.changed, ", ")+"]", "not an update: changed does not apply", true)
		return true
	}
	var diffs []string
	for _, p := range r.changed {
		if ev.Differs(p) {
			if rec == nil {
				return true
			}
			o, n := gjson.GetBytes(rec.old, p), gjson.GetBytes(rec.obj, p)
			diffs = append(diffs, fmt.Sprintf("%s: %s -> %s", p, rawOr(o), rawOr(n)))
		}
	}
	found := strings.Join(diffs, "; ")
	if found == "" {
		found = "no value at these paths changed"
	}
	record(rec, "changed ["+strings.Join(r.changed, ", ")+"]", found, len(diffs) > 0)
	return len(diffs) > 0
}

func record(rec *recorder, check, found string, held bool) {
	if rec != nil {
		rec.steps = append(rec.steps, Step{Check: check, Found: found, Held: held})
	}
}

// explain names condition i as the config writes it, and what it found.
func (c *condition) explain(i int, rec *recorder) (check, found string) {
	if c.cel != nil {
		return fmt.Sprintf("when[%d] cel %s", i, c.spec.CEL), "the objects (CEL)"
	}
	doc, which := rec.obj, ""
	if c.old {
		doc, which = rec.old, " (old object)"
	}
	found = "nothing (the path is missing)"
	if doc == nil {
		found = "nothing (no old object: only updates have one)"
	} else if v := gjson.GetBytes(doc, c.spec.Path); v.Exists() {
		found = v.Raw
	} else if _, _, derived := event.DerivedRoot(c.spec.Path); derived {
		if v := rec.ev.Get(c.old, c.spec.Path); v.Exists() {
			found = v.Raw
		}
	}
	check = fmt.Sprintf("when[%d] %s%s %s", i, c.spec.Path, which, c.spec.Op)
	if c.spec.Value.IsSet() {
		v, _ := yamlText(c.spec.Value)
		check += " " + v
	}
	return check, found
}

// SelectsObject reports, offline, whether one of the rule's selectors selects
// an object of res (group, version, kind; the plural guessed from the kind),
// for `dynwatch test`, which has no discovery; run selects through discovery.
func (r *Rule) SelectsObject(res event.Resource) bool {
	for _, s := range r.Selectors {
		if s.MatchesObject(res.Group, res.Version, res.Kind) {
			return true
		}
	}
	return false
}

// InNamespace reports whether the rule covers objects in ns; cluster-scoped
// objects (ns "") are covered by every rule.
func (r *Rule) InNamespace(ns string) bool {
	if r.Namespaces == nil || ns == "" {
		return true
	}
	_, found := slices.BinarySearch(r.Namespaces, ns)
	return found
}

// Paths returns every path the rule reads from objects: conditions, changed and
// fields; a path under health. stands for the object paths health reads.
func (r *Rule) Paths() []string {
	var ps []string
	for _, p := range r.paths() {
		if root, _, ok := event.DerivedRoot(p); ok && root == event.HealthRoot {
			hp := r.healthPaths
			if hp == nil {
				hp = health.Paths(nil)
			}
			ps = append(ps, hp...)
			continue
		}
		ps = append(ps, p)
	}
	return ps
}

// SetHealthPaths tells the rule what the config's health reads
// (health.Paths of its Checker: a kind's own CEL may read more than the
// generic rules), for Paths.
func (r *Rule) SetHealthPaths(ps []string) { r.healthPaths = ps }

// paths are the paths the rule's checks and fields name, health.* included.
func (r *Rule) paths() []string {
	var ps []string
	for _, c := range r.conds {
		ps = append(ps, c.paths()...)
	}
	ps = append(ps, r.changed...)
	for _, f := range r.fields {
		ps = append(ps, f.Path)
	}
	return ps
}

// ReadsHealth reports whether a condition or a field of the rule reads the
// object's health: its payloads then carry "health".
func (r *Rule) ReadsHealth() bool {
	return slices.ContainsFunc(r.paths(), func(p string) bool {
		root, _, ok := event.DerivedRoot(p)
		return ok && root == event.HealthRoot
	})
}

// FieldNames returns the names of the rule's fields, sorted.
func (r *Rule) FieldNames() []string {
	names := make([]string, len(r.fields))
	for i, f := range r.fields {
		names[i] = f.Name
	}
	return names
}

// Payload builds the payload of the prepared event for r; transition is the
// Verdict's (for fire: enter, exit and edges).
func (r *Rule) Payload(p *payload.Prepared, transition string) *event.Payload {
	pl := payload.Build(p, r.Name, r.fields)
	pl.Transition = transition
	if r.readsHealth {
		pl.Health = p.Event.HealthOf(false)
	}
	return pl
}

func objectLabels(obj []byte) labels.Set {
	set := labels.Set{}
	gjson.GetBytes(obj, "metadata.labels").ForEach(func(k, v gjson.Result) bool {
		set[k.Str] = v.String()
		return true
	})
	return set
}

func rawOr(r gjson.Result) string {
	if !r.Exists() {
		return "(missing)"
	}
	return r.Raw
}

func yamlText(v config.Value) (string, error) {
	b, err := yaml.Marshal(v.Node)
	return strings.TrimSpace(string(b)), err
}

package rules

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/event"
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
	// forWait and keepFiringFor are the rule's waits (timed.Spec).
	forWait, keepFiringFor time.Duration
	// timed: see Timed; rolling: a CEL condition calls now() (timed.Spec).
	timed, rolling bool
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
	// Since is, on a timed rule's firing with Waits, when its conditions
	// started (enter, or an always rule's) or stopped (exit) holding; zero
	// otherwise.
	Since time.Time
}

// Decide decides whether the event fires the rule: the one place that decides
// it, for run, tail, test and the tests alike. The caller has already checked
// that the rule selects the event's resource.
func (r *Rule) Decide(ev *event.Event, added Added) Verdict {
	return r.decide(ev, added, nil, ev.Time)
}

// Explain is Decide recording every check it makes, in order, with what it
// found and whether it held; unlike Decide it goes on past a failed check, so
// that every check is shown. The verdict is Decide's by construction. What it
// found is read from the objects as red redacts them (nil: as they are), as
// every output shows them. Time conditions are evaluated at the event's Time.
func (r *Rule) Explain(ev *event.Event, added Added, red *payload.Redactor) (Verdict, []Step) {
	return r.explain(ev, added, red, ev.Time)
}

func (r *Rule) explain(ev *event.Event, added Added, red *payload.Redactor, now time.Time) (Verdict, []Step) {
	rec := &recorder{obj: red.Redact(ev.Resource, ev.Object), old: red.Redact(ev.Resource, ev.OldObject), now: now, ev: ev, red: red}
	v := r.decide(ev, added, rec, now)
	return v, rec.steps
}

// recorder collects Explain's steps, and the objects it shows values from.
type recorder struct {
	steps    []Step
	obj, old []byte
	// now is the evaluation's, shown by the checks of time.
	now time.Time
	// ev shows what is derived of the objects (health.*), not in them;
	// health as red shows it next to the objects redacted.
	ev  *event.Event
	red *payload.Redactor
}

// Holds reports whether the event's object is in the rule's namespaces, matches
// its label selector and satisfies every condition: what audit asks of the
// objects that exist now, whatever the event type. Time conditions are
// evaluated at the event's Time.
func (r *Rule) Holds(ev *event.Event) bool {
	held, _ := r.holdsAt(ev, ev.Time, nil)
	return held
}

// decide runs every check of the rule on ev, time conditions at now; with rec
// it records each one and does not stop at the first that fails.
func (r *Rule) decide(ev *event.Event, added Added, rec *recorder, now time.Time) Verdict {
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
		held, _ := r.holdsAt(ev, now, rec)
		ok = held && ok
	} else {
		var fits bool
		transition, fits = r.transition(ev, rec, now)
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
func (r *Rule) transition(ev *event.Event, rec *recorder, now time.Time) (string, bool) {
	before := ev.Type != event.Add && r.held(ev.View(ev.Type == event.Update), now)
	after := ev.Type != event.Delete && r.held(ev.View(false), now)
	t := ""
	switch {
	case after && !before:
		t = "enter"
	case before && !after:
		t = "exit"
	}
	fits := t != "" && (r.Fire == config.FireEdges || r.Fire == t)
	if rec != nil {
		r.holdsAt(ev.View(false), now, rec) // the checks, on the new object
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

// held is holdsAt's verdict alone.
func (r *Rule) held(ev *event.Event, now time.Time) bool {
	held, _ := r.holdsAt(ev, now, nil)
	return held
}

// holdsAt checks the rule's namespaces, label selector and conditions on ev
// at now (see HoldsAt); with rec it records each check and does not stop at
// the first that fails.
func (r *Rule) holdsAt(ev *event.Event, now time.Time, rec *recorder) (bool, time.Time) {
	ok := true
	if r.Namespaces != nil {
		// A namespaced object without a namespace (an object file written
		// without one) is in none of the rule's namespaces.
		held := r.InNamespace(ev.Namespace) && (ev.Namespace != "" || !ev.Resource.Namespaced)
		record(rec, "namespaces ["+strings.Join(r.Namespaces, ", ")+"]", fmt.Sprintf("%q", ev.Namespace), held)
		if ok = held; !ok && rec == nil {
			return false, time.Time{}
		}
	}
	if !r.LabelSelector.Empty() {
		held := r.LabelSelector.Matches(objectLabels(ev.Object))
		if rec != nil {
			// What it found is shown as redacted: a config may redact a label.
			record(rec, "labelSelector "+r.LabelSelector.String(), objectLabels(rec.obj).String(), held)
		}
		if ok = held && ok; !ok && rec == nil {
			return false, time.Time{}
		}
	}
	// A condition that does not read time and fails makes the answer wait
	// for an event: no recheck. Until one does, every condition that reads
	// time is evaluated (a failing one does not stop the others), so that
	// recheck is the earliest change among them.
	var recheck time.Time
	waitsForEvent := !ok
	for i, c := range r.conds {
		held, change := c.holdsAt(ev, now)
		if rec != nil {
			check, found := c.explain(i, rec)
			record(rec, check, found, held)
		}
		ok = held && ok
		if !held && !c.readsTime() {
			if rec == nil {
				return false, time.Time{}
			}
			waitsForEvent = true
		}
		recheck = earliest(recheck, change)
	}
	if waitsForEvent {
		recheck = time.Time{}
	}
	return ok, recheck
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
			if root, rest, ok := event.DerivedRoot(p); ok && root == event.HealthRoot {
				o, n = rec.red.HealthField(rec.ev, true, rest), rec.red.HealthField(rec.ev, false, rest)
			}
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

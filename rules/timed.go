package rules

import (
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/timed"
)

// Waits keeps the state of each object under each timed rule (package
// timed): in the state file with state.path, else in memory. The watcher
// gives one to run's Evaluator; tail, audit and test have none, and decide a
// timed rule as any other, its waits ignored.
type Waits interface {
	// Wait is the object's state under the rule; the zero State when
	// nothing is kept.
	Wait(objectKey, rule string) timed.State
	// SetWait is told of every step, changed or not (the store decides
	// what to write): the event, and the state before and after.
	SetWait(ev *event.Event, rule string, prev, next timed.State)
}

// Timed reports whether the rule needs a state per object, kept across
// events: it waits (for, keepFiringFor) or a condition reads time
// (olderThan, newerThan, CEL's now()), whose answer changes with no event.
func (r *Rule) Timed() bool { return r.timed }

// readsTime reports whether one of the rule's conditions reads time, and
// the first that does.
func (r *Rule) readsTime() (*condition, bool) {
	for _, c := range r.conds {
		if c.readsTime() {
			return c, true
		}
	}
	return nil, false
}

// TimedSpec is what timed.Step needs of the rule.
func (r *Rule) TimedSpec() timed.Spec {
	return timed.Spec{Fire: r.Fire, For: r.forWait, KeepFiringFor: r.keepFiringFor, Rolling: r.rolling}
}

// HoldsAt is Holds with time conditions evaluated at now, and recheck, when
// their answer next changes with no event: the time plus the duration of an
// olderThan or newerThan (if after now), now plus celRecheck for CEL that
// calls now(); zero when nothing changes with time alone (a check that
// does not read time fails, or none reads time).
func (r *Rule) HoldsAt(ev *event.Event, now time.Time) (holds bool, recheck time.Time) {
	return r.holdsAt(ev, now, nil)
}

// step decides a timed rule on ev with e.Waits: the rule's state on the
// object is stepped (timed.Step) and kept, and the verdict is what the step
// fires; an always rule also fires, as Decide would, on every event that
// matches. An event whose type on excludes steps nothing, but a delete
// always steps (the object is gone, its wait with it), as does a timer's.
func (e *Evaluator) step(r *Rule, ev *event.Event, now time.Time) Verdict {
	timer := ev.Timed != nil
	var v Verdict
	if r.Fire == config.FireAlways && !timer {
		v = r.decide(ev, e.Added, nil, now)
	}
	if !timer && ev.Type != event.Delete && r.on&onBits[ev.Type] == 0 {
		return v
	}
	in := timed.Input{Now: now, Deleted: ev.Type == event.Delete}
	in.Silent = !timer && !r.originAllows(ev, e.Added, nil)
	if !in.Deleted {
		in.Holds, in.Recheck = r.HoldsAt(ev, now)
	}
	key := ev.ObjectKey()
	prev := e.Waits.Wait(key, r.Name)
	next, f := timed.Step(r.TimedSpec(), prev, in)
	e.Waits.SetWait(ev, r.Name, prev, next)
	if f.Transition == "" {
		return v
	}
	v = Verdict{Fires: true, Transition: f.Transition, Since: f.Since}
	if f.Transition == timed.Holds {
		v.Transition = "" // an always rule's firing has no transition
	}
	return v
}

// timedPayload adds to a timed firing's payload when its conditions started
// (enter) or stopped (exit) holding, and, made by a timer, when it fell due
// and whether dynwatch was down then.
func timedPayload(pl *event.Payload, v Verdict, ev *event.Event) {
	if !v.Since.IsZero() {
		pl.Since = v.Since.UTC().Format(event.TimeFormat)
	}
	if ev.Timed != nil {
		pl.Due = ev.Timed.Due.UTC().Format(event.TimeFormat)
		pl.Late = ev.Timed.Late
	}
}

// readsCELTime reports whether a CEL condition of the rule calls now(): its
// next change cannot be known, only asked again.
func (r *Rule) readsCELTime() bool {
	for _, c := range r.conds {
		if c.cel != nil && c.cel.readsTime {
			return true
		}
	}
	return false
}

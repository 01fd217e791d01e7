package rules

import (
	"sync"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/payload"
)

// Match is a rule an event fired, with its verdict and its payload.
type Match struct {
	// Rule is the rule that fired.
	Rule *Rule
	// Verdict is its decision, the transition included.
	Verdict Verdict
	// Payload is the event's payload for the rule, its objects redacted.
	Payload *event.Payload
}

// Observer is told of each decision an Evaluator makes: how long it took and
// whether the rule fired (the daemon's metrics count and time them).
type Observer interface {
	Evaluated(rule string, took time.Duration, fired bool)
}

// Evaluator evaluates rules on events: the one loop of deciding each rule,
// preparing the event (once, for the first rule it fires) and building each
// payload, that run, tail, audit and test share. Its zero value decides live
// events and redacts what the built-in default does (Secret values): a caller
// that forgets the config's redactor leaks nothing.
type Evaluator struct {
	// Redactor blanks the configured paths of the payloads' objects, and of
	// what Explained is shown; nil: the built-in default (config.DefaultRedact).
	Redactor *payload.Redactor
	// Added names, per reload epoch, the rules that reload added (run only).
	Added Added
	// State asks of each rule whether the object satisfies it now (Holds),
	// whatever the event: audit's question of the objects that exist, not a
	// change's.
	State bool
	// Observer, when set, is told of every decision.
	Observer Observer
	// Explained, when set, makes each decision with Explain, and is handed
	// the verdict and its steps, whether the rule fires or not (test
	// --explain): the steps and the payload come from one evaluation.
	// Waits is not asked then.
	Explained func(r *Rule, v Verdict, steps []Step)
	// Waits, when set, keeps each object's state under each timed rule
	// (Rule.Timed), which then fires as its state says: enter once for has
	// passed, exit once keepFiringFor has (run). Without it a timed rule
	// decides as any other, at the event's transition.
	Waits Waits
	// Now is the time conditions' now (olderThan, newerThan, CEL's now());
	// nil: the event's Time.
	Now func() time.Time
	// Deriver computes what rules read of an object beyond its bytes (its
	// health, health.*), for events that come without one; nil: nothing is
	// derived, and health.* is missing.
	Deriver event.Deriver
}

// Evaluate decides each of rs on ev and returns the matches, in the order of
// rs, each with its payload. The caller has already chosen the rules that
// select the event's resource. A timer's event (ev.Timed) is evaluated for
// its rule alone.
func (e *Evaluator) Evaluate(rs []*Rule, ev *event.Event) []Match {
	var out []Match
	var prepared *payload.Prepared
	if ev.Deriver == nil {
		ev.Deriver = e.Deriver
	}
	for _, r := range rs {
		if ev.Timed != nil && ev.Timed.Rule != r.Name {
			continue
		}
		v := e.decide(r, ev)
		if !v.Fires {
			continue
		}
		if prepared == nil {
			prepared = payload.Prepare(e.redactor(), ev)
		}
		pl := r.Payload(prepared, v.Transition)
		timedPayload(pl, v, ev)
		out = append(out, Match{Rule: r, Verdict: v, Payload: pl})
	}
	return out
}

// now is the evaluation's now: e.Now's, or the event's Time.
func (e *Evaluator) now(ev *event.Event) time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return ev.Time
}

// decide is the one decision, made the way e asks for, and observed.
func (e *Evaluator) decide(r *Rule, ev *event.Event) Verdict {
	var start time.Time
	if e.Observer != nil {
		start = time.Now()
	}
	var v Verdict
	now := e.now(ev)
	switch {
	case e.Explained != nil:
		var steps []Step
		v, steps = r.explain(ev, e.Added, e.redactor(), now)
		e.Explained(r, v, steps)
	case e.State:
		held, _ := r.HoldsAt(ev, now)
		v = Verdict{Fires: held}
	case e.Waits != nil && r.Timed():
		v = e.step(r, ev, now)
	default:
		v = r.decide(ev, e.Added, nil, now)
	}
	if e.Observer != nil {
		e.Observer.Evaluated(r.Name, time.Since(start), v.Fires)
	}
	return v
}

// defaultRedactor is the built-in redact list, compiled once.
var defaultRedactor = sync.OnceValue(func() *payload.Redactor { return payload.NewRedactor(config.DefaultRedact()) })

// redactor is e's redactor, or the built-in default when it has none.
func (e *Evaluator) redactor() *payload.Redactor {
	if e.Redactor != nil {
		return e.Redactor
	}
	return defaultRedactor()
}

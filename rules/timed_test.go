package rules

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/timed"
)

// memWaits is Waits in memory, as run keeps them without state.path.
type memWaits map[string]timed.State

func (w memWaits) Wait(key, rule string) timed.State { return w[key+" "+rule] }

func (w memWaits) SetWait(ev *event.Event, rule string, _, next timed.State) {
	if next.IsZero() {
		delete(w, ev.ObjectKey()+" "+rule)
		return
	}
	w[ev.ObjectKey()+" "+rule] = next
}

var t0 = time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)

// clock is a run of events on one ConfigMap through an Evaluator with Waits.
type clock struct {
	t     *testing.T
	rules []*Rule
	waits memWaits
	eval  *Evaluator
	rv    int
}

func newClock(t *testing.T, rulesYAML string) *clock {
	rs := compile(t, "apiVersion: dynwatch/v1alpha1\nactions: [{name: out, log: {}}]\nrules:\n"+rulesYAML)
	c := &clock{t: t, rules: rs, waits: memWaits{}}
	c.eval = &Evaluator{Waits: c.waits}
	return c
}

// cm is the ConfigMap with data.bad and a creationTimestamp.
func cm(bad string, rv int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","uid":"u1","resourceVersion":"%d","creationTimestamp":"2026-12-07T20:00:00Z"},"data":{"bad":%q}}`, rv, bad)
}

var cmRes = event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}

// change evaluates a live event of type typ at t0+at, the object's data.bad
// being bad, and returns what fired as "rule:transition" (transition "-"
// for none).
func (c *clock) change(typ event.Type, at time.Duration, bad string) []Match {
	c.rv++
	ev := event.New(typ, cmRes, cm(bad, c.rv), nil, t0.Add(at))
	return c.eval.Evaluate(c.rules, ev)
}

// timer evaluates the timer's event of rule: the object as it is (data.bad
// bad), at the wait's Due; none if nothing waits.
func (c *clock) timer(rule, bad string) (time.Time, []Match) {
	c.t.Helper()
	var r *Rule
	for _, x := range c.rules {
		if x.Name == rule {
			r = x
		}
	}
	ev := event.New(event.Update, cmRes, cm(bad, c.rv), nil, time.Time{})
	due := c.waits.Wait(ev.ObjectKey(), rule).Due(r.TimedSpec())
	if due.IsZero() {
		return due, nil
	}
	ev.Time, ev.Timed = due, &event.Timed{Rule: rule, Due: due}
	return due, c.eval.Evaluate(c.rules, ev)
}

func fired(ms []Match) string {
	var out []string
	for _, m := range ms {
		tr := m.Verdict.Transition
		if tr == "" {
			tr = "-"
		}
		out = append(out, m.Rule.Name+":"+tr)
	}
	return strings.Join(out, " ")
}

func (c *clock) want(step string, ms []Match, want string) {
	c.t.Helper()
	if got := fired(ms); got != want {
		c.t.Fatalf("%s: fired %q, want %q", step, got, want)
	}
}

// for: enter fires once the conditions have held for that long, at the
// timer, with since and due; a flap restarts the wait, and nothing fires
// again while they keep holding.
func TestForFiresOnceAfterTheWait(t *testing.T) {
	c := newClock(t, `  - {name: slow, resources: [{kind: ConfigMap}], fire: enter, for: 5m, when: [{path: data.bad, op: eq, value: "yes"}], actions: [out]}
`)
	c.want("add", c.change(event.Add, 0, "yes"), "")
	c.want("update, holding", c.change(event.Update, 2*time.Minute, "yes"), "")
	c.want("flap", c.change(event.Update, 3*time.Minute, "no"), "")
	if due, ms := c.timer("slow", "no"); !due.IsZero() || len(ms) > 0 {
		t.Fatalf("after the flap: a wait due %v fired %q", due, fired(ms))
	}
	c.want("holds again", c.change(event.Update, 4*time.Minute, "yes"), "")
	due, ms := c.timer("slow", "yes")
	c.want("timer", ms, "slow:enter")
	if !due.Equal(t0.Add(9 * time.Minute)) {
		t.Errorf("due %v, want for after the last start, %v", due, t0.Add(9*time.Minute))
	}
	pl := ms[0].Payload
	if pl.Since != "2026-12-07T20:04:00.000Z" || pl.Due != "2026-12-07T20:09:00.000Z" || pl.Late || pl.Transition != "enter" {
		t.Errorf("payload since %q, due %q, late %v, transition %q", pl.Since, pl.Due, pl.Late, pl.Transition)
	}
	if !strings.HasSuffix(pl.ID, ":timer@"+fmt.Sprint(due.UnixNano())) {
		t.Errorf("a timer's payload id %q", pl.ID)
	}
	c.want("update after enter", c.change(event.Update, 10*time.Minute, "yes"), "")
	if due, _ := c.timer("slow", "yes"); !due.IsZero() {
		t.Errorf("after enter, a wait is due at %v", due)
	}
}

// A timer's event is evaluated for its rule only, timed or not.
func TestTimerEventIsForItsRuleOnly(t *testing.T) {
	c := newClock(t, `  - {name: slow, resources: [{kind: ConfigMap}], fire: enter, for: 5m, when: [{path: data.bad, op: eq, value: "yes"}], actions: [out]}
  - {name: plain, resources: [{kind: ConfigMap}], when: [{path: data.bad, op: eq, value: "yes"}], actions: [out]}
  - {name: other, resources: [{kind: ConfigMap}], fire: enter, for: 1m, when: [{path: data.bad, op: eq, value: "yes"}], actions: [out]}
`)
	c.want("add", c.change(event.Add, 0, "yes"), "plain:-")
	_, ms := c.timer("slow", "yes")
	c.want("slow's timer", ms, "slow:enter")
}

// keepFiringFor: a recovery shorter than it fires nothing; exit fires once
// it has lasted that long, with since when the conditions stopped holding.
func TestKeepFiringForSuppressesABriefRecovery(t *testing.T) {
	c := newClock(t, `  - {name: sticky, resources: [{kind: ConfigMap}], fire: edges, keepFiringFor: 10m, when: [{path: data.bad, op: eq, value: "yes"}], actions: [out]}
`)
	c.want("add", c.change(event.Add, 0, "yes"), "sticky:enter")
	c.want("brief recovery", c.change(event.Update, time.Minute, "no"), "")
	c.want("bad again", c.change(event.Update, 5*time.Minute, "yes"), "")
	c.want("recovery", c.change(event.Update, 6*time.Minute, "no"), "")
	due, ms := c.timer("sticky", "no")
	c.want("timer", ms, "sticky:exit")
	if !due.Equal(t0.Add(16*time.Minute)) || ms[0].Payload.Since != "2026-12-07T20:06:00.000Z" {
		t.Errorf("exit due %v since %q", due, ms[0].Payload.Since)
	}
	if len(c.waits) != 0 {
		t.Errorf("after exit, kept: %v", c.waits)
	}
}

// A delete cancels a wait that runs, firing nothing; after enter it fires
// exit at once. Deletes step the state whatever on says.
func TestDeleteEndsTheWait(t *testing.T) {
	c := newClock(t, `  - {name: slow, resources: [{kind: ConfigMap}], fire: edges, for: 5m, on: [add, update], when: [{path: data.bad, op: eq, value: "yes"}], actions: [out]}
`)
	c.want("add", c.change(event.Add, 0, "yes"), "")
	c.want("delete while pending", c.change(event.Delete, time.Minute, "yes"), "")
	if len(c.waits) != 0 {
		t.Fatalf("deleted while pending, kept: %v", c.waits)
	}
	c.want("add again", c.change(event.Add, 2*time.Minute, "yes"), "")
	_, ms := c.timer("slow", "yes")
	c.want("timer", ms, "slow:enter")
	ms = c.change(event.Delete, 8*time.Minute, "yes")
	c.want("delete after enter", ms, "slow:exit")
	if ms[0].Payload.Since != "2026-12-07T20:08:00.000Z" || ms[0].Payload.Due != "" {
		t.Errorf("delete's exit: since %q, due %q", ms[0].Payload.Since, ms[0].Payload.Due)
	}
	if len(c.waits) != 0 {
		t.Errorf("after the delete, kept: %v", c.waits)
	}
}

// An event whose type on excludes does not step a timed rule's state: the
// wait goes on as if it had not happened.
func TestOnExcludedEventStepsNothing(t *testing.T) {
	c := newClock(t, `  - {name: slow, resources: [{kind: ConfigMap}], fire: enter, for: 5m, on: [add], when: [{path: data.bad, op: eq, value: "yes"}], actions: [out]}
`)
	c.want("add", c.change(event.Add, 0, "yes"), "")
	c.want("update, excluded", c.change(event.Update, time.Minute, "no"), "")
	_, ms := c.timer("slow", "yes")
	c.want("timer", ms, "slow:enter")
}

// An initial list under onStart: none fires nothing, and what holds on it is
// taken as entered: no enter later, at a timer or an update; exit still
// fires when the conditions stop holding.
func TestInitialListUnderOnStartNoneIsSilent(t *testing.T) {
	c := newClock(t, `  - {name: slow, resources: [{kind: ConfigMap}], fire: edges, for: 5m, onStart: none, when: [{path: data.bad, op: eq, value: "yes"}], actions: [out]}
`)
	ev := event.New(event.Add, cmRes, cm("yes", 1), nil, t0)
	ev.Origin = event.InitialList
	c.want("initial list", c.eval.Evaluate(c.rules, ev), "")
	if due, ms := c.timer("slow", "yes"); !due.IsZero() || len(ms) > 0 {
		t.Fatalf("after the initial list: a wait due %v fired %q", due, fired(ms))
	}
	c.want("update, holding", c.change(event.Update, 10*time.Minute, "yes"), "")
	c.want("update, recovered", c.change(event.Update, 11*time.Minute, "no"), "slow:exit")
}

// Without Waits (tail, audit, test) a timed rule decides as any other: for
// is not waited for.
func TestWithoutWaitsForIsIgnored(t *testing.T) {
	c := newClock(t, `  - {name: slow, resources: [{kind: ConfigMap}], fire: enter, for: 5m, when: [{path: data.bad, op: eq, value: "yes"}], actions: [out]}
`)
	c.eval.Waits = nil
	c.want("add", c.change(event.Add, 0, "yes"), "slow:enter")
	if ms := c.change(event.Add, time.Second, "yes"); ms[0].Payload.Since != "" {
		t.Errorf("without Waits, since %q", ms[0].Payload.Since)
	}
}

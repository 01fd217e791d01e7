package timed

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// step is one input of a run: at t0+at, the conditions hold or not.
type step struct {
	at                     time.Duration
	holds, silent, deleted bool
	recheck                time.Time
	// want is the transition it fires ("" none), and since when.
	want  string
	since time.Duration
}

// run steps sp through the inputs from prev, checking what each fires, and
// returns the last state.
func run(t *testing.T, sp Spec, prev State, steps []step) State {
	t.Helper()
	s := prev
	for i, st := range steps {
		var f Fire
		s, f = Step(sp, s, Input{Holds: st.holds, Now: at(st.at), Silent: st.silent, Deleted: st.deleted, Recheck: st.recheck})
		if f.Transition != st.want {
			t.Fatalf("step %d (at %v): fired %q, want %q (state %+v)", i, st.at, f.Transition, st.want, s)
		}
		if st.want != "" && !f.Since.Equal(at(st.since)) {
			t.Fatalf("step %d: since %v, want %v", i, f.Since, at(st.since))
		}
	}
	return s
}

// A flap, the conditions stopping before for has passed, restarts the wait:
// enter fires once, for after the last time they came to hold, with since.
func TestForFlapRestartsTheWait(t *testing.T) {
	sp := Spec{Fire: FireEnter, For: 5 * time.Minute}
	s := run(t, sp, State{}, []step{
		{at: 0, holds: true},
		{at: 4 * time.Minute, holds: true},
		{at: 4*time.Minute + 30*time.Second, holds: false},
		{at: 6 * time.Minute, holds: true},
		{at: 10 * time.Minute, holds: true},
		{at: 11 * time.Minute, holds: true, want: Enter, since: 6 * time.Minute},
		{at: 12 * time.Minute, holds: true},
		{at: 20 * time.Minute, holds: true},
	})
	if !s.Entered || !s.Holding || !s.Since.Equal(at(6*time.Minute)) {
		t.Errorf("state after enter: %+v", s)
	}
}

// Due is the end of for while it waits, so that the timer wakes when enter
// is due; after enter, nothing waits.
func TestDue(t *testing.T) {
	sp := Spec{Fire: FireEdges, For: 5 * time.Minute, KeepFiringFor: time.Minute}
	s, _ := Step(sp, State{}, Input{Holds: true, Now: at(time.Minute)})
	if got := s.Due(sp); !got.Equal(at(6 * time.Minute)) {
		t.Errorf("pending: Due %v, want %v", got, at(6*time.Minute))
	}
	s, f := Step(sp, s, Input{Holds: true, Now: s.Due(sp)})
	if f.Transition != Enter || !s.Due(sp).IsZero() {
		t.Errorf("at Due: fired %q, Due %v; want enter and no Due", f.Transition, s.Due(sp))
	}
	s, _ = Step(sp, s, Input{Holds: false, Now: at(7 * time.Minute)})
	if got := s.Due(sp); !got.Equal(at(8 * time.Minute)) {
		t.Errorf("exit wait: Due %v, want %v", got, at(8*time.Minute))
	}
	recheck := at(7*time.Minute + 30*time.Second)
	s, _ = Step(sp, s, Input{Holds: false, Now: at(7 * time.Minute), Recheck: recheck})
	if got := s.Due(sp); !got.Equal(recheck) {
		t.Errorf("a recheck before the exit: Due %v, want %v", got, recheck)
	}
	if got := (State{}).Due(sp); !got.IsZero() {
		t.Errorf("zero state: Due %v", got)
	}
}

// keepFiringFor: a recovery shorter than it fires nothing; one that lasts
// fires exit once, with since when the conditions stopped holding.
func TestKeepFiringForSuppressesBriefRecovery(t *testing.T) {
	sp := Spec{Fire: FireEdges, KeepFiringFor: 10 * time.Minute}
	s := run(t, sp, State{}, []step{
		{at: 0, holds: true, want: Enter, since: 0},
		{at: time.Minute, holds: false},
		{at: 5 * time.Minute, holds: false},
		{at: 6 * time.Minute, holds: true},
		{at: 7 * time.Minute, holds: false},
		{at: 16 * time.Minute, holds: false},
		{at: 17 * time.Minute, holds: false, want: Exit, since: 7 * time.Minute},
		{at: 30 * time.Minute, holds: false},
	})
	if !s.IsZero() {
		t.Errorf("after exit: %+v, want nothing kept", s)
	}
}

// An exit rule fires exit only; an enter rule's exit is silent, and a rule
// without waits fires at once.
func TestFireModes(t *testing.T) {
	run(t, Spec{Fire: FireExit}, State{}, []step{
		{at: 0, holds: true},
		{at: time.Minute, holds: false, want: Exit, since: time.Minute},
	})
	run(t, Spec{Fire: FireEnter}, State{}, []step{
		{at: 0, holds: true, want: Enter, since: 0},
		{at: time.Minute, holds: false},
		{at: 2 * time.Minute, holds: true, want: Enter, since: 2 * time.Minute},
	})
	run(t, Spec{Fire: FireAlways}, State{}, []step{
		{at: 0, holds: true, want: Holds, since: 0},
		{at: time.Minute, holds: true},
		{at: 2 * time.Minute, holds: false},
		{at: 3 * time.Minute, holds: true, want: Holds, since: 3 * time.Minute},
	})
}

// An object deleted while for runs cancels the wait; deleted after enter,
// it fires exit at once, keepFiringFor or not; nothing is kept either way.
func TestDelete(t *testing.T) {
	sp := Spec{Fire: FireEdges, For: 5 * time.Minute, KeepFiringFor: 10 * time.Minute}
	s := run(t, sp, State{}, []step{
		{at: 0, holds: true},
		{at: time.Minute, deleted: true},
	})
	if !s.IsZero() {
		t.Errorf("deleted while pending: %+v kept", s)
	}
	s = run(t, sp, State{}, []step{
		{at: 0, holds: true},
		{at: 5 * time.Minute, holds: true, want: Enter, since: 0},
		{at: 6 * time.Minute, deleted: true, want: Exit, since: 6 * time.Minute},
	})
	if !s.IsZero() {
		t.Errorf("deleted after enter: %+v kept", s)
	}
	// Deleted during the exit wait: exit fires since the conditions stopped.
	run(t, sp, State{}, []step{
		{at: 0, holds: true},
		{at: 5 * time.Minute, holds: true, want: Enter, since: 0},
		{at: 6 * time.Minute, holds: false},
		{at: 8 * time.Minute, deleted: true, want: Exit, since: 6 * time.Minute},
	})
}

// Silent on an object with nothing kept takes what holds as entered: no
// wait, nothing fired, and no enter later while it keeps holding.
func TestSilentTakesHoldingAsEntered(t *testing.T) {
	sp := Spec{Fire: FireEdges, For: 5 * time.Minute}
	s := run(t, sp, State{}, []step{
		{at: 0, holds: true, silent: true},
		{at: 10 * time.Minute, holds: true},
		{at: 11 * time.Minute, holds: false, want: Exit, since: 11 * time.Minute},
	})
	if !s.IsZero() {
		t.Errorf("after exit: %+v", s)
	}
	s = run(t, sp, State{}, []step{{at: 0, holds: false, silent: true}})
	if !s.IsZero() {
		t.Errorf("silent, not holding: %+v kept", s)
	}
}

// Silent on an object whose wait is kept (a restart with state, a relist)
// fires nothing and loses nothing: a transition due is left to the timer,
// whose Due is then past, and a wait not yet due goes on from its start.
func TestSilentKeepsAWait(t *testing.T) {
	sp := Spec{Fire: FireEdges, For: 5 * time.Minute, KeepFiringFor: 5 * time.Minute}
	pending := State{Holding: true, Since: at(0)}
	s := run(t, sp, pending, []step{{at: 2 * time.Minute, holds: true, silent: true}})
	if s != pending {
		t.Errorf("silent, not due: %+v, want %+v", s, pending)
	}
	s = run(t, sp, pending, []step{{at: 9 * time.Minute, holds: true, silent: true}})
	if s.Entered || !s.Due(sp).Equal(at(5*time.Minute)) {
		t.Errorf("silent, enter due: %+v (Due %v), want pending, due at 5m", s, s.Due(sp))
	}
	run(t, sp, s, []step{{at: 9 * time.Minute, holds: true, want: Enter, since: 0}})

	exiting := State{Entered: true, ExitSince: at(0)}
	s = run(t, sp, exiting, []step{{at: 9 * time.Minute, silent: true}})
	if s != exiting {
		t.Errorf("silent, exit due: %+v, want %+v kept", s, exiting)
	}
	run(t, sp, s, []step{{at: 9 * time.Minute, want: Exit, since: 0}})
}

// The state file's encoding gives back what it was given, zero times
// included, and refuses what it did not write.
func TestMarshalRoundTrip(t *testing.T) {
	for _, s := range []State{
		{},
		{Holding: true, Since: at(time.Nanosecond)},
		{Entered: true, ExitSince: at(time.Hour), Recheck: at(2 * time.Hour)},
		{Holding: true, Entered: true, Since: at(-time.Hour), Recheck: at(time.Second)},
	} {
		got, err := Unmarshal(s.Marshal())
		if err != nil || got != s {
			t.Errorf("Unmarshal(Marshal(%+v)) = %+v, %v", s, got, err)
		}
	}
	for _, b := range [][]byte{nil, make([]byte, encodedLen-1), append([]byte{4}, make([]byte, encodedLen-1)...)} {
		if _, err := Unmarshal(b); err == nil {
			t.Errorf("Unmarshal(%x): no error", b)
		}
	}
}

// IsZero: only a state with nothing in it is not kept.
func TestIsZero(t *testing.T) {
	for _, s := range []State{{Holding: true}, {Entered: true}, {ExitSince: t0}, {Recheck: t0}} {
		if s.IsZero() {
			t.Errorf("%+v is zero", s)
		}
	}
}

// A time condition that came to hold at its exact recheck started holding
// then, whenever the step comes: a start's silent list after dynwatch was
// down leaves its enter due at that time, for the timer (late). A rolling
// recheck (CEL's now()) says nothing of when.
func TestSinceIsAnExactRecheckPast(t *testing.T) {
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	prev := State{Recheck: at}
	now := at.Add(time.Hour)
	sp := Spec{Fire: FireEnter}
	next, f := Step(sp, prev, Input{Holds: true, Now: now, Silent: true})
	if f.Transition != "" || next.Entered || !next.Since.Equal(at) || !next.Due(sp).Equal(at) {
		t.Errorf("silent step: %+v, %+v; want pending since %s, due then, nothing fired", next, f, at)
	}
	next, f = Step(sp, prev, Input{Holds: true, Now: now})
	if f.Transition != Enter || !f.Since.Equal(at) {
		t.Errorf("live step: %+v, want enter since %s", f, at)
	}
	sp.Rolling = true
	if next, _ = Step(sp, prev, Input{Holds: true, Now: now}); !next.Since.Equal(now) {
		t.Errorf("rolling recheck: since %s, want now %s", next.Since, now)
	}
}

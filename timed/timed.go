// Package timed is the state machine of a timed rule on one object: a rule
// with `for` (its conditions must hold that long before enter fires),
// `keepFiringFor` (they must have stopped holding that long before exit
// fires) or a condition that reads time (olderThan, newerThan, CEL's now()),
// whose answer changes with no event.
//
// Step is a pure function of the previous State, what the conditions say
// now and the time: the watcher keeps a State per object and timed rule (in
// the state file with state.path, else in memory) and wakes at State.Due.
// It imports no dynwatch package.
package timed

import (
	"encoding/binary"
	"errors"
	"time"
)

// The fire modes a Spec takes (config.Fire*).
const (
	FireAlways = "always"
	FireEnter  = "enter"
	FireExit   = "exit"
	FireEdges  = "edges"
)

// Spec is what Step needs of a rule.
type Spec struct {
	// Fire is always, enter, exit or edges.
	Fire string
	// For and KeepFiringFor are the rule's waits.
	For, KeepFiringFor time.Duration
	// Rolling: a condition's next change cannot be known (CEL's now()), so
	// Recheck is only when to ask again; otherwise Recheck is the exact time
	// a time condition's answer changes (olderThan, newerThan), which a
	// state file keeps, and, once past, when the conditions started to hold.
	Rolling bool
}

// State is what is kept of one object under one timed rule. The zero State
// is an object on which the conditions do not hold and nothing waits: it is
// not kept.
type State struct {
	// Holding: the conditions held at the last evaluation, since Since.
	Holding bool
	Since   time.Time
	// Entered: enter happened (fired, or silently for an object that held
	// when it was first seen), and exit has not yet.
	Entered bool
	// ExitSince: while Entered, when the conditions stopped holding (the
	// keepFiringFor wait runs from it); zero while they hold.
	ExitSince time.Time
	// Recheck is when a time condition's answer changes next (zero: none).
	Recheck time.Time
}

// IsZero reports whether there is nothing to keep.
func (s State) IsZero() bool {
	return !s.Holding && !s.Entered && s.ExitSince.IsZero() && s.Recheck.IsZero()
}

// Pending reports whether enter waits for `for` to pass.
func (s State) Pending() bool { return s.Holding && !s.Entered }

// Due is when the state must be evaluated again with no event: the end of
// a wait, or a time condition's next change; zero when nothing waits.
func (s State) Due(sp Spec) time.Time {
	var due time.Time
	if s.Pending() {
		due = s.Since.Add(sp.For)
	}
	if s.Entered && !s.Holding && !s.ExitSince.IsZero() {
		due = earliest(due, s.ExitSince.Add(sp.KeepFiringFor))
	}
	return earliest(due, s.Recheck)
}

func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// Fire is what a Step fires: a transition ("" none; "fire" for an always
// rule whose conditions came to hold with no event) and when the conditions
// started (enter) or stopped (exit) holding.
type Fire struct {
	Transition string
	Since      time.Time
}

// Input is what the conditions say at now.
type Input struct {
	// Holds: the conditions hold on the object now (false on a delete).
	Holds bool
	// Recheck is when a time condition's answer changes next (zero: none).
	Recheck time.Time
	// Now is the event's time, or the timer's.
	Now time.Time
	// Silent: the event may not fire the rule (its origin, say an initial
	// list under onStart: none). On an object with nothing kept, what holds
	// is taken as entered, with no wait and nothing fired. On one with a
	// state (a wait kept across a restart, a relist) nothing fires either,
	// but no wait is lost: a transition that is due is left undone, and
	// Due, now past, has the timer make it.
	Silent bool
	// Deleted: the object is gone; an entered state exits at once and
	// nothing is kept.
	Deleted bool
}

// The transition names Step fires.
const (
	Enter = "enter"
	Exit  = "exit"
	// Holds is an always rule whose conditions came to hold: what its timer
	// fires, with no event (an event that holds fires it anyway).
	Holds = "holds"
)

// Step evaluates the rule's state machine once: the state to keep and what
// fires. A flap (the conditions stop holding before for has passed)
// restarts the wait; holding again before keepFiringFor has passed cancels
// the exit.
func Step(sp Spec, prev State, in Input) (State, Fire) {
	if in.Deleted {
		if prev.Entered && !in.Silent {
			return State{}, fire(sp, Exit, prev.exitStart(in.Now))
		}
		return State{}, Fire{}
	}
	next := State{Recheck: in.Recheck, Entered: prev.Entered}
	if in.Holds {
		next.Holding, next.Since = true, prev.Since
		switch {
		case prev.Holding && !prev.Since.IsZero():
		case !sp.Rolling && !prev.Recheck.IsZero() && !prev.Recheck.After(in.Now):
			// A time condition came to hold at its recheck, whenever this
			// step comes (a timer late to wake, the list at a start).
			next.Since = prev.Recheck
		default:
			next.Since = in.Now
		}
	}
	switch {
	case in.Silent && prev.IsZero():
		next.Entered = in.Holds
	case in.Holds && !prev.Entered && !in.Now.Before(next.Since.Add(sp.For)):
		if f := fire(sp, Enter, next.Since); !in.Silent || f.Transition == "" {
			next.Entered = true
			return next, f
		}
		// Silent: left pending, its Due past.
	case in.Holds:
		// Entered (an exit wait, if any, cancelled), or waiting.
	case prev.Entered:
		next.ExitSince = prev.exitStart(in.Now)
		if in.Now.Before(next.ExitSince.Add(sp.KeepFiringFor)) {
			break
		}
		if f := fire(sp, Exit, next.ExitSince); !in.Silent || f.Transition == "" {
			next.Entered, next.ExitSince = false, time.Time{}
			return next, f
		}
		// Silent: left entered, its Due past.
	}
	return next, Fire{}
}

// exitStart is when the conditions stopped holding: the exit wait's start,
// or now.
func (s State) exitStart(now time.Time) time.Time {
	if !s.ExitSince.IsZero() {
		return s.ExitSince
	}
	return now
}

// fire is the transition t, if the rule's fire wants it.
func fire(sp Spec, t string, since time.Time) Fire {
	switch {
	case sp.Fire == FireEdges, sp.Fire == t:
		return Fire{Transition: t, Since: since}
	case sp.Fire == FireAlways && t == Enter:
		return Fire{Transition: Holds, Since: since}
	}
	return Fire{}
}

const encodedLen = 1 + 3*8

// Marshal encodes the state for the state file: a flags byte and three
// times in Unix nanoseconds (0: zero).
func (s State) Marshal() []byte {
	b := make([]byte, encodedLen)
	if s.Holding {
		b[0] |= 1
	}
	if s.Entered {
		b[0] |= 2
	}
	for i, t := range [...]time.Time{s.Since, s.ExitSince, s.Recheck} {
		binary.BigEndian.PutUint64(b[1+8*i:], uint64(unixNano(t)))
	}
	return b
}

// Unmarshal decodes what Marshal encoded.
func Unmarshal(b []byte) (State, error) {
	if len(b) != encodedLen || b[0]&^3 != 0 {
		return State{}, errors.New("timed: not an encoded state")
	}
	var t [3]time.Time
	for i := range t {
		if n := int64(binary.BigEndian.Uint64(b[1+8*i:])); n != 0 {
			t[i] = time.Unix(0, n).UTC()
		}
	}
	return State{Holding: b[0]&1 != 0, Entered: b[0]&2 != 0, Since: t[0], ExitSince: t[1], Recheck: t[2]}, nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

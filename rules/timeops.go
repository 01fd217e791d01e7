package rules

import (
	"fmt"
	"time"

	"github.com/tidwall/gjson"
)

// The operators that read time: olderThan and newerThan compare the RFC 3339
// time at the path with the evaluation's now minus a duration. Their answer
// changes with no event, at the time plus the duration: each test says when,
// so that a timed rule is evaluated again then (Rule.HoldsAt).

// timeTest decides a condition at now, and says when its answer changes
// next with no event (zero: not before an event changes the object).
type timeTest = func(r gjson.Result, now time.Time) (held bool, change time.Time)

// compileAtFunc is what the row of an operator that reads time compiles its
// value with.
type compileAtFunc = func(Args) (timeTest, error)

// olderThan holds when the time at the path is at or before now minus d;
// newerThan when it is after. Both change at the time plus d.
func olderThan(a Args) (timeTest, error) { return age("olderThan", a, true) }
func newerThan(a Args) (timeTest, error) { return age("newerThan", a, false) }

func age(name string, a Args, older bool) (timeTest, error) {
	o := a.One
	if !o.hasDur || o.kind != gjson.String {
		return nil, fmt.Errorf("%s needs a duration (90s, 1h30m, 1d, 1w), got %q", name, o.source)
	}
	if o.dur < 0 {
		return nil, fmt.Errorf("%s needs a duration of 0 or more, got %q", name, o.source)
	}
	d := o.dur
	return func(r gjson.Result, now time.Time) (bool, time.Time) {
		t, ok := timeAt(r)
		if !ok {
			return false, time.Time{}
		}
		flip := t.Add(d) // older from then on, newer until then
		var change time.Time
		if flip.After(now) {
			change = flip
		}
		return !now.Before(flip) == older, change
	}, nil
}

// timeAt reads an RFC 3339 time (fractional seconds or not) from a string.
func timeAt(r gjson.Result) (time.Time, bool) {
	if r.Type != gjson.String {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, r.Str)
	return t, err == nil
}

// overListAt is overList for an operator that reads time: it holds when it
// holds for any value, and its answer may change when any value's does.
func overListAt(test timeTest) timeTest {
	return func(r gjson.Result, now time.Time) (bool, time.Time) {
		if !r.IsArray() {
			return test(r, now)
		}
		elems := flatten(r, nil)
		if len(elems) == 0 {
			return test(gjson.Result{}, now)
		}
		held, change := false, time.Time{}
		for _, e := range elems {
			h, c := test(e, now)
			held = held || h
			change = earliest(change, c)
		}
		return held, change
	}
}

// earliest is the earlier of two times, zero being none.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// explainAge is what an olderThan or newerThan check found: the time at the
// path, when the answer changes, and the evaluation's now.
func (c *condition) explainAge(found string, v gjson.Result, now time.Time) string {
	t, ok := timeAt(v)
	if !ok {
		if !v.IsArray() { // a # query's list: its values are shown as they are
			found += " (not an RFC 3339 time)"
		}
		return found
	}
	word := "older than %s from %s"
	if c.spec.Op == "newerThan" {
		word = "newer than %s until %s"
	}
	return found + " (" + fmt.Sprintf(word, c.spec.Value.Node.Value, t.Add(c.age).UTC().Format(time.RFC3339)) + "; now " + now.UTC().Format(time.RFC3339) + ")"
}

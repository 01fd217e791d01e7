package config

import "slices"

// validateWaits checks for and keepFiringFor, after the defaults step (nil
// is none; the decoder refuses a negative duration): each delays one transition, so it needs a fire that has that
// transition, and neither goes with changed.
func (rs *RuleSpec) validateWaits(v *validator, p string) {
	waits := false
	for _, w := range []struct {
		field  string
		d      *Duration
		delays string // the transition it delays, and the fire that has it alone
	}{
		{"for", rs.For, FireEnter},
		{"keepFiringFor", rs.KeepFiringFor, FireExit},
	} {
		switch {
		case w.d == nil || *w.d == 0:
		case rs.Fire != w.delays && rs.Fire != FireEdges && slices.Contains(fires, rs.Fire):
			waits = true
			v.errf(p+"."+w.field, "needs fire: %s or edges (it delays %s; this rule's fire is %s)", w.delays, w.delays, rs.Fire)
		default:
			waits = true // an unknown fire is reported as such
		}
	}
	if waits && len(rs.Changed) > 0 {
		v.errf(p+".changed", "changed cannot be combined with for or keepFiringFor: a wait ends with no update, on the object as it stands, so there is no change to compare (put the paths in when instead)")
	}
}

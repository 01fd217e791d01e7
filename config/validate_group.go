package config

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dynwatch/dynwatch/editdist"
)

// validate checks an action's group: its by labels, wait, interval and max.
func (g *GroupSpec) validate(v *validator, p string) {
	if g == nil {
		return
	}
	for i, l := range g.By {
		lp := fmt.Sprintf("%s.by[%d]", p, i)
		switch first := slices.Index(g.By, l); {
		case !slices.Contains(GroupByLabels, l):
			v.errf(lp, "unknown label %q%s (want any of %s)", l, didYouMean(l, GroupByLabels), strings.Join(GroupByLabels, ", "))
		case first < i:
			v.errf(lp, "duplicate label %q (first at by[%d])", l, first)
		}
	}
	positive(v, p+".wait", g.Wait)
	positive(v, p+".interval", g.Interval)
	if *g.Max < 1 {
		v.errf(p+".max", "must be at least 1, got %d", *g.Max)
	}
}

// MinPerSecond is the smallest rateLimit.perSecond: one delivery a day.
const MinPerSecond = 1.0 / 86400

// validate checks an action's rateLimit: a rate of at least MinPerSecond
// and a burst of one or more.
func (r *RateLimitSpec) validate(v *validator, p string) {
	if r == nil {
		return
	}
	switch {
	case math.IsNaN(r.PerSecond) || math.IsInf(r.PerSecond, 0):
		v.errf(p+".perSecond", "want a finite number, got %v", r.PerSecond)
	case r.PerSecond == 0:
		v.errf(p+".perSecond", "required: deliveries per second, more than 0 (0.1: one every 10s)")
	case r.PerSecond < 0:
		v.errf(p+".perSecond", "must be more than 0, got %v", r.PerSecond)
	case r.PerSecond < MinPerSecond:
		v.errf(p+".perSecond", "must be at least one a day (%.3g), got %v", MinPerSecond, r.PerSecond)
	}
	if *r.Burst < 1 {
		v.errf(p+".burst", "must be at least 1, got %d", *r.Burst)
	}
}

// didYouMean suggests the choice closest to word, as ", did you mean X?",
// or "" when none is close: within two edits (case aside), and fewer edits
// than word has letters, so that a short word is not matched to anything.
func didYouMean(word string, choices []string) string {
	best := editdist.Closest(word, choices)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(", did you mean %q?", best)
}

package watcher

import (
	"github.com/dynwatch/dynwatch/action"
	"github.com/dynwatch/dynwatch/config"
)

// groupOptions are the queue options of an action's group and rateLimit
// (the defaults step has set every field); nil for what it does not set.
func groupOptions(spec config.ActionSpec) (*action.GroupOptions, *action.RateLimitOptions) {
	var g *action.GroupOptions
	var rl *action.RateLimitOptions
	if gs := spec.Group; gs != nil {
		g = &action.GroupOptions{By: gs.By, Wait: config.DefaultGroupWait, Interval: config.DefaultGroupInterval, Max: config.DefaultGroupMax}
		if gs.Wait != nil {
			g.Wait = gs.Wait.Std()
		}
		if gs.Interval != nil {
			g.Interval = gs.Interval.Std()
		}
		if gs.Max != nil {
			g.Max = *gs.Max
		}
	}
	if r := spec.RateLimit; r != nil {
		rl = &action.RateLimitOptions{PerSecond: r.PerSecond, Burst: config.DefaultRateLimitBurst}
		if r.Burst != nil {
			rl.Burst = *r.Burst
		}
	}
	return g, rl
}

package offline

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
)

// explainActions writes, for each action of a firing rule, what happens to
// the event on its way: the group it joins (its by-labels and timings) when
// the action groups, and the rate limit when one applies.
func explainActions(w io.Writer, actions []*config.ActionSpec, p *event.Payload) {
	for _, a := range actions {
		switch g := a.Group; {
		case g != nil:
			fmt.Fprintf(w, "action %s groups by [%s]: this event joins the group %s, delivered %s after its first event, then at most every %s, %d events a delivery at most\n",
				a.Name, strings.Join(g.By, " "), groupName(g.By, p), g.Wait.Std(), g.Interval.Std(), *g.Max)
		default:
			fmt.Fprintf(w, "action %s delivers this event on its own (no group)\n", a.Name)
		}
		if r := a.RateLimit; r != nil {
			fmt.Fprintf(w, "action %s is rate limited to %s deliveries a second, bursts of %d: deliveries wait their turn, none is dropped\n",
				a.Name, strconv.FormatFloat(r.PerSecond, 'g', -1, 64), *r.Burst)
		}
	}
}

// groupName spells the labels of p's group under by as {namespace=a rule=r}
// in by's order; {} is the action's one group.
func groupName(by []string, p *event.Payload) string {
	labels := event.GroupLabels(by, p)
	parts := make([]string, 0, len(by))
	for _, l := range by {
		if !slices.Contains(config.GroupByLabels, l) {
			continue
		}
		parts = append(parts, l+"="+strconv.Quote(labels[l]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

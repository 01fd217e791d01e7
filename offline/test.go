package offline

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/payload"
	"github.com/dynwatch/dynwatch/rules"
)

// Test is one `dynwatch test`: a rule evaluated on objects read from files.
type Test struct {
	// Rule is the rule evaluated.
	Rule *rules.Rule
	// Redactor blanks the config's redacted paths in what is shown.
	Redactor *payload.Redactor
	// New are the objects; each is an add, or with Old an update from the
	// object of Old at the same place (Old and New pair up in order).
	New, Old [][]byte
	// Explain also writes each check with the value found and whether it
	// held and, when the rule fires, what each of Actions does with the event
	// (the group it joins, a rate limit).
	Explain bool
	// Actions are the specs of the rule's actions, in the rule's order.
	Actions []*config.ActionSpec
	// Now is the events' time. Default: time.Now.
	Now func() time.Time
}

// Run evaluates the rule on every object as run would and writes, for each,
// whether it fires (with Explain each check first) and the payload when it
// does. It reports whether the rule fired on every object.
func (t Test) Run(w io.Writer) bool {
	if t.Now == nil {
		t.Now = time.Now
	}
	all := true
	for i, obj := range t.New {
		typ, old := event.Add, []byte(nil)
		if t.Old != nil {
			typ, old = event.Update, t.Old[i]
		}
		if len(t.New) > 1 {
			fmt.Fprintf(w, "--- object %d of %d: %s %s\n", i+1, len(t.New), gjson.GetBytes(obj, "kind").Str, gjson.GetBytes(obj, "metadata.name").Str)
		}
		if !t.one(w, event.New(typ, ResourceOf(obj, t.Rule), obj, old, t.Now())) {
			all = false
		}
	}
	return all
}

// one evaluates the rule on one event, once: Explain's steps and the payload
// come from the same evaluation.
func (t Test) one(w io.Writer, ev *event.Event) bool {
	rule := t.Rule
	selected := rule.SelectsObject(ev.Resource)
	var steps []rules.Step
	eval := rules.Evaluator{Redactor: t.Redactor, Explained: func(_ *rules.Rule, _ rules.Verdict, s []rules.Step) { steps = s }}
	matches := eval.Evaluate([]*rules.Rule{rule}, ev)
	if t.Explain {
		steps = append([]rules.Step{{Check: "resources", Found: fmt.Sprintf("%s (group %q, version %s)", ev.Resource.Kind, ev.Resource.Group, ev.Resource.Version), Held: selected}}, steps...)
		for _, s := range steps {
			verdict := "holds"
			if !s.Held {
				verdict = "does NOT hold"
			}
			// One terminal line per step, whatever the values hold.
			fmt.Fprintf(w, "%-50s found %s: %s\n", payload.Printable(s.Check), payload.Printable(s.Found), verdict)
		}
	}
	if !selected {
		fmt.Fprintf(w, "rule %s does not select %s objects (group %q): it does not fire\n", rule.Name, ev.Resource.Kind, ev.Resource.Group)
		return false
	}
	if len(matches) == 0 {
		fmt.Fprintf(w, "rule %s does not fire on this %s\n", rule.Name, ev.Type)
		return false
	}
	fmt.Fprintf(w, "rule %s fires on this %s; payload:\n", rule.Name, ev.Type)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // "<redacted>" reads as written
	enc.SetIndent("", "  ")
	if enc.Encode(matches[0].Payload) != nil {
		return false
	}
	if t.Explain {
		explainActions(w, t.Actions, matches[0].Payload)
	}
	return true
}

package offline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/action"
	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/health"
	"github.com/dynwatch/dynwatch/payload"
	"github.com/dynwatch/dynwatch/rules"
)

// Test is one `dynwatch test`: a rule evaluated on objects read from files.
type Test struct {
	// Rule is the rule evaluated.
	Rule *rules.Rule
	// Redactor blanks the config's redacted paths in what is shown.
	Redactor *payload.Redactor
	// New are the objects; each is an add, or with Old a change from the
	// object of Old at the same place (Old and New pair up in order): an
	// update, as run makes of it (see change).
	New, Old [][]byte
	// NewManaged and OldManaged are the managedFields arrays of New's and
	// Old's objects, in their order (nil, or a nil item: none), which an
	// update's and a delete's actor is read from as run reads it
	// (dyninformer.ChangeActor).
	NewManaged, OldManaged [][]byte
	// Explain also writes each check with the value found and whether it
	// held and, when the rule fires, what each of Actions does with the event
	// (the group it joins, a rate limit).
	Explain bool
	// Actions are the specs of the rule's actions, in the rule's order.
	Actions []*config.ActionSpec
	// Render also writes, when the rule fires, what each of Senders would
	// send for the event: its body, headers and key, as the sender renders
	// them, secrets masked (Env.Secrets).
	Render bool
	// Senders are the rule's actions compiled, in the rule's order (for Render).
	Senders []*action.Action
	// Env is what Render renders with: the config's secrets, the CloudEvents
	// source (default "dynwatch").
	Env action.Env
	// Now is the events' time. Default: time.Now.
	Now func() time.Time
	// Deriver computes the objects' health, as the config's
	// (plan.File.Health) does. Default: kstatus' rules alone.
	Deriver event.Deriver
}

// Run evaluates the rule on every object as run would and writes, for each,
// whether it fires (with Explain each check first) and the payload when it
// does. It reports whether the rule fired on every object.
func (t Test) Run(w io.Writer) bool {
	if t.Now == nil {
		t.Now = time.Now
	}
	if t.Deriver == nil {
		t.Deriver, _ = health.New(nil)
	}
	w = terminal{w}
	all := true
	for i, obj := range t.New {
		if len(t.New) > 1 {
			fmt.Fprintf(w, "--- object %d of %d: %s %s\n", i+1, len(t.New), gjson.GetBytes(obj, "kind").Str, gjson.GetBytes(obj, "metadata.name").Str)
		}
		ev := event.New(event.Add, ResourceOf(obj, t.Rule), obj, nil, t.Now())
		if t.Old == nil {
			all = t.one(w, ev) && all
			continue
		}
		old := event.New(event.Delete, ResourceOf(t.Old[i], t.Rule), t.Old[i], nil, t.Now())
		newMF, oldMF := item(t.NewManaged, i), item(t.OldManaged, i)
		old.Actor = dyninformer.ChangeActor(oldMF, nil) // the delete's: the last writer
		all = t.change(w, old, ev, dyninformer.ChangeActor(newMF, oldMF)) && all
	}
	return all
}

// change evaluates the rule on what run makes of one object going from old
// (its delete) to ev (its add), in run's order: the two, when their uids
// differ (deleted and made again under the name); nothing when they are the
// same object at one resourceVersion (a resync, which fires no rule);
// otherwise an update, made by actor. It reports whether the rule fired (on
// either of the two).
func (t Test) change(w io.Writer, old, ev *event.Event, actor *event.Actor) bool {
	if old.UID != "" && ev.UID != "" && old.UID != ev.UID {
		fmt.Fprintf(w, "--old and --new have different uids (%s, %s): run sees the old object deleted and the new one added\n", payload.Printable(old.UID), payload.Printable(ev.UID))
		deleted := t.one(w, old)
		added := t.one(w, ev)
		return deleted || added
	}
	// One resourceVersion is one content to run. Two different contents
	// under one (a copy of the object, edited by hand) are tested as the
	// update they stand for.
	if ev.ResourceVersion != "" && bytes.Equal(old.Object, ev.Object) {
		fmt.Fprintf(w, "--old and --new are the same object at one resourceVersion (%s): to run that is a resync, which fires no rule\n", payload.Printable(ev.ResourceVersion))
		return false
	}
	ev.Type, ev.OldObject, ev.Actor = event.Update, old.Object, actor
	return t.one(w, ev)
}

// item is objs[i], nil past its end.
func item(objs [][]byte, i int) []byte {
	if i < len(objs) {
		return objs[i]
	}
	return nil
}

// PairProblem says why old and new (objects that --old and --new pair up in
// order) could not be one object's change, as run sees changes: each pair must
// be of one API group, kind, namespace and name. nil when every pair is.
func PairProblem(old, new [][]byte) error {
	for i := range min(len(old), len(new)) {
		o, n := objectName(old[i]), objectName(new[i])
		if o != n {
			return fmt.Errorf("object %d: --old is %s and --new %s; an update is of one object (group, kind, namespace and name): test each as an add instead", i+1, o, n)
		}
	}
	return nil
}

// objectName names obj as kind.group namespace/name, for PairProblem.
func objectName(obj []byte) string {
	f := gjson.GetManyBytes(obj, "kind", "apiVersion", "metadata.namespace", "metadata.name")
	kind := f[0].Str
	if group, _, ok := strings.Cut(f[1].Str, "/"); ok {
		kind += "." + group
	}
	name := f[3].Str
	if f[2].Str != "" {
		name = f[2].Str + "/" + name
	}
	return payload.Printable(kind + " " + name)
}

// one evaluates the rule on one event, once: Explain's steps and the payload
// come from the same evaluation.
func (t Test) one(w io.Writer, ev *event.Event) bool {
	rule := t.Rule
	selected := rule.SelectsObject(ev.Resource)
	var steps []rules.Step
	eval := rules.Evaluator{Redactor: t.Redactor, Explained: func(_ *rules.Rule, _ rules.Verdict, s []rules.Step) { steps = s }, Deriver: t.Deriver}
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
	if t.Render && renderActions(w, t.Senders, t.Env, ev, matches[0].Payload) != nil {
		return false
	}
	return true
}

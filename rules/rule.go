package rules

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/event"
)

type onMask uint8

const (
	onAdd onMask = 1 << iota
	onUpdate
	onDelete
)

var onBits = map[event.Type]onMask{event.Add: onAdd, event.Update: onUpdate, event.Delete: onDelete}

type field struct {
	name, path string
}

// Rule is a compiled rule: everything that can be checked or prepared at load
// time has been.
type Rule struct {
	Name string
	// Selectors choose the rule's resources from discovery.
	Selectors []discovery.Selector
	// Namespaces the rule watches, sorted; nil means all namespaces.
	Namespaces []string
	// LabelSelector filters objects by label; labels.Everything() when unset.
	LabelSelector labels.Selector
	// OnStart is diff, all or none, with the default resolved.
	OnStart string
	// Actions are the names of the actions the rule delivers to.
	Actions []string

	on      onMask
	conds   []*condition
	changed []string
	fields  []field
}

// InNamespace reports whether the rule covers objects in ns; cluster-scoped
// objects (ns "") are covered by every rule.
func (r *Rule) InNamespace(ns string) bool {
	if r.Namespaces == nil || ns == "" {
		return true
	}
	_, found := slices.BinarySearch(r.Namespaces, ns)
	return found
}

// Paths returns every path the rule reads from objects: conditions, changed and
// fields.
func (r *Rule) Paths() []string {
	var ps []string
	for _, c := range r.conds {
		ps = append(ps, c.spec.Path)
	}
	ps = append(ps, r.changed...)
	for _, f := range r.fields {
		ps = append(ps, f.path)
	}
	return ps
}

// Match decides whether the event fires the rule. The caller has already checked
// that the rule selects the event's resource.
func (r *Rule) Match(ev *event.Event) bool {
	if r.on&onBits[ev.Type] == 0 || ev.Relisted {
		return false
	}
	if ev.Initial && r.OnStart != OnStartAll {
		return false
	}
	if ev.Replay && r.OnStart != OnStartDiff {
		return false // replays are what onStart: diff fires
	}
	return r.Holds(ev) && r.ChangedHolds(ev)
}

// Holds reports whether the event's object is in the rule's namespaces, matches
// its label selector and satisfies every condition: what audit asks of the
// objects that exist now, whatever the event type.
func (r *Rule) Holds(ev *event.Event) bool {
	if !r.InNamespace(ev.Namespace) {
		return false
	}
	if !r.LabelSelector.Empty() && !r.LabelSelector.Matches(objectLabels(ev.Object)) {
		return false
	}
	for _, c := range r.conds {
		if !c.holds(ev.Object, ev.OldObject) {
			return false
		}
	}
	return true
}

// ChangedHolds reports whether an update changed a value at one of the rule's
// changed paths; it holds for every other event, and when the rule has none.
func (r *Rule) ChangedHolds(ev *event.Event) bool {
	if ev.Type != event.Update || len(r.changed) == 0 {
		return true
	}
	for _, p := range r.changed {
		if gjson.GetBytes(ev.Object, p).Raw != gjson.GetBytes(ev.OldObject, p).Raw {
			return true
		}
	}
	return false
}

// FieldNames returns the names of the rule's fields, sorted.
func (r *Rule) FieldNames() []string {
	names := make([]string, len(r.fields))
	for i, f := range r.fields {
		names[i] = f.name
	}
	return names
}

func objectLabels(obj []byte) labels.Set {
	set := labels.Set{}
	gjson.GetBytes(obj, "metadata.labels").ForEach(func(k, v gjson.Result) bool {
		set[k.Str] = v.String()
		return true
	})
	return set
}

// Step is one check of a rule on an event, with what was found and whether it held.
type Step struct {
	// Check names the check as the config writes it, e.g. "when[0] spec.replicas gt 5".
	Check string
	// Found is what the check saw.
	Found string
	Held  bool
}

// Explain evaluates every check of the rule on the event, in the order Match
// makes them, and reports each one; the rule fires when all hold.
func (r *Rule) Explain(ev *event.Event) []Step {
	var steps []Step
	var on []string
	for _, t := range []event.Type{event.Add, event.Update, event.Delete} {
		if r.on&onBits[t] != 0 {
			on = append(on, string(t))
		}
	}
	steps = append(steps, Step{Check: "on [" + strings.Join(on, ", ") + "]", Found: string(ev.Type), Held: r.on&onBits[ev.Type] != 0})
	if r.Namespaces != nil {
		steps = append(steps, Step{Check: "namespaces [" + strings.Join(r.Namespaces, ", ") + "]", Found: fmt.Sprintf("%q", ev.Namespace), Held: r.InNamespace(ev.Namespace)})
	}
	if !r.LabelSelector.Empty() {
		set := objectLabels(ev.Object)
		steps = append(steps, Step{Check: "labelSelector " + r.LabelSelector.String(), Found: set.String(), Held: r.LabelSelector.Matches(set)})
	}
	for i, c := range r.conds {
		doc, which := ev.Object, ""
		if c.old {
			doc, which = ev.OldObject, " (old object)"
		}
		found := "nothing (the path is missing)"
		if doc != nil {
			if v := gjson.GetBytes(doc, c.spec.Path); v.Exists() {
				found = v.Raw
			}
		} else {
			found = "nothing (no old object: only updates have one)"
		}
		check := fmt.Sprintf("when[%d] %s%s %s", i, c.spec.Path, which, c.spec.Op)
		if c.spec.Value.IsSet() {
			v, _ := yamlText(c.spec.Value)
			check += " " + v
		}
		steps = append(steps, Step{Check: check, Found: found, Held: c.holds(ev.Object, ev.OldObject)})
	}
	if len(r.changed) > 0 {
		var diffs []string
		if ev.Type == event.Update {
			for _, p := range r.changed {
				o, n := gjson.GetBytes(ev.OldObject, p), gjson.GetBytes(ev.Object, p)
				if o.Raw != n.Raw {
					diffs = append(diffs, fmt.Sprintf("%s: %s -> %s", p, rawOr(o), rawOr(n)))
				}
			}
		}
		found := strings.Join(diffs, "; ")
		switch {
		case ev.Type != event.Update:
			found = "not an update: changed does not apply"
		case found == "":
			found = "no value at these paths changed"
		}
		steps = append(steps, Step{Check: "changed [" + strings.Join(r.changed, ", ") + "]", Found: found, Held: r.ChangedHolds(ev)})
	}
	return steps
}

func rawOr(r gjson.Result) string {
	if !r.Exists() {
		return "(missing)"
	}
	return r.Raw
}

func yamlText(v Value) (string, error) {
	b, err := yaml.Marshal(v.Node)
	return strings.TrimSpace(string(b)), err
}

// Prepared is an event made ready for payloads: objects redacted and the changed
// paths computed, once, however many rules it matches.
type Prepared struct {
	Event     *event.Event
	Object    []byte
	OldObject []byte
	Changed   []string
}

// Prepare redacts the event's objects and, for updates, computes the changed paths.
func (f *File) Prepare(ev *event.Event) *Prepared { return Prepare(f.Redactor, ev) }

// Prepare redacts the event's objects with red and, for updates, computes the
// changed paths.
func Prepare(red *Redactor, ev *event.Event) *Prepared {
	p := &Prepared{
		Event:     ev,
		Object:    red.Redact(ev.Resource, ev.Object),
		OldObject: red.Redact(ev.Resource, ev.OldObject),
	}
	switch {
	case ev.Type != event.Update:
	case ev.OldPaths != nil:
		// Only the recorded paths are known of the old state.
		for _, path := range ev.OldPaths {
			if gjson.GetBytes(ev.OldObject, path).Raw != gjson.GetBytes(ev.Object, path).Raw {
				p.Changed = append(p.Changed, path)
			}
		}
		slices.Sort(p.Changed)
	default:
		p.Changed = ChangedPaths(ev.OldObject, ev.Object)
	}
	return p
}

// Payload builds the SPEC §4 payload of the prepared event for rule r.
func (r *Rule) Payload(p *Prepared) *event.Payload {
	ev := p.Event
	pl := &event.Payload{
		ID:              ev.ID(),
		Time:            ev.Time.UTC().Format(event.TimeFormat),
		Type:            ev.Type,
		Replay:          ev.Replay,
		Rule:            r.Name,
		Resource:        ev.Resource,
		Namespace:       ev.Namespace,
		Name:            ev.Name,
		UID:             ev.UID,
		ResourceVersion: ev.ResourceVersion,
		Changed:         p.Changed,
		Object:          p.Object,
		OldObject:       p.OldObject,
	}
	if len(r.fields) > 0 {
		pl.Fields = make(map[string]json.RawMessage, len(r.fields))
		for _, f := range r.fields {
			v := gjson.GetBytes(p.Object, f.path)
			if v.Exists() {
				pl.Fields[f.name] = json.RawMessage(v.Raw)
			} else {
				pl.Fields[f.name] = json.RawMessage("null")
			}
		}
	}
	return pl
}

// Delivery encodes the payload once for every action of the rule.
func Delivery(pl *event.Payload, key string) (*event.Delivery, error) {
	b, err := marshal(pl)
	if err != nil {
		return nil, err
	}
	return &event.Delivery{Payload: pl, JSON: b, Key: key}, nil
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

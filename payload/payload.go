package payload

import (
	"bytes"
	"encoding/json"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/event"
)

// Field is one payload field: a name and the gjson path its value is read from.
type Field struct {
	Name, Path string
}

// Prepared is an event made ready for payloads: objects redacted and the changed
// paths computed, once, however many rules it matches.
type Prepared struct {
	Event     *event.Event
	Object    []byte
	OldObject []byte
	Changed   []string

	// redacted says Object is the event's object with values blanked; see
	// Health, which caches the health a payload shows in health.
	redacted   bool
	health     *event.Health
	healthDone bool
}

// Prepare redacts the event's objects with red and, for updates, computes the
// changed paths.
func Prepare(red *Redactor, ev *event.Event) *Prepared {
	p := &Prepared{
		Event:     ev,
		Object:    red.Redact(ev.Resource, ev.Object),
		OldObject: red.Redact(ev.Resource, ev.OldObject),
		redacted:  red.touches(ev.Resource, ev.Object),
	}
	switch {
	case ev.Type != event.Update:
	case ev.Recorded != nil:
		p.Changed = ev.ChangedRecorded() // only the recorded paths are known of the old state
	default:
		// Both states known: the payload says what changed, if nothing
		// ("changed": []). A replay's changed paths are only those the
		// records hold, and a moved-in update's old state is unknown: none
		// says "changed" when it found nothing.
		if p.Changed = ChangedPaths(ev.OldObject, ev.Object); p.Changed == nil {
			p.Changed = []string{}
		}
	}
	return p
}

// Build returns the payload of the prepared event for the named rule, with the
// rule's fields read from the redacted object.
func Build(p *Prepared, rule string, fields []Field) *event.Payload {
	ev := p.Event
	pl := &event.Payload{
		ID:              ev.ID(),
		Time:            ev.Time.UTC().Format(event.TimeFormat),
		Type:            ev.Type,
		Replay:          ev.IsReplay(),
		Rule:            rule,
		Resource:        ev.Resource,
		Namespace:       ev.Namespace,
		Name:            ev.Name,
		UID:             ev.UID,
		ResourceVersion: ev.ResourceVersion,
		Cluster:         ev.Cluster,
		Changed:         p.Changed,
		Object:          p.Object,
		OldObject:       p.OldObject,
	}
	if ev.Type == event.Update || ev.Type == event.Delete {
		// Who made the change (nil: not known, as for a replay).
		pl.Actor = ev.Actor
	}
	if len(fields) > 0 {
		pl.Fields = make(map[string]json.RawMessage, len(fields))
		for _, f := range fields {
			v := gjson.GetBytes(p.Object, f.Path)
			if root, rest, derived := event.DerivedRoot(f.Path); derived {
				// health.*, actor.*: derived, not in the object; health
				// as Health shows it next to the redacted object.
				v = ev.Get(false, f.Path)
				if root == event.HealthRoot {
					v = healthField(p.Health(), rest)
				}
			}
			if v.Exists() {
				pl.Fields[f.Name] = json.RawMessage(v.Raw)
			} else {
				pl.Fields[f.Name] = json.RawMessage("null")
			}
		}
	}
	return pl
}

// Delivery encodes the payload once, for every action of its rule.
func Delivery(pl *event.Payload, key string) (*event.Delivery, error) {
	b, err := encode(pl)
	if err != nil {
		return nil, err
	}
	return &event.Delivery{Payload: pl, JSON: b, Key: key}, nil
}

// encode is Marshal(pl), without encoding/json's pass over the objects: they
// are compact JSON already (the API server's, or Marshal's), and they are the
// payload's last members, so they are appended as they are.
func encode(pl *event.Payload) ([]byte, error) {
	head := *pl
	head.Object, head.OldObject = nil, nil
	b, err := Marshal(&head)
	if err != nil {
		return nil, err
	}
	// b ends with `"object":null}`: the object takes null's place.
	if !bytes.HasSuffix(b, []byte(`"object":null}`)) {
		return Marshal(pl) // the payload's shape changed: the slow way
	}
	b = b[:len(b)-len("null}")]
	obj := pl.Object
	if len(obj) == 0 {
		obj = json.RawMessage("null")
	}
	out := make([]byte, 0, len(b)+len(obj)+len(pl.OldObject)+16)
	out = append(append(out, b...), obj...)
	if len(pl.OldObject) > 0 {
		out = append(append(out, `,"oldObject":`...), pl.OldObject...)
	}
	return append(out, '}'), nil
}

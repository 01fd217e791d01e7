package payload

import (
	"encoding/json"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/event"
)

// Health returns the object's health as a payload may show it next to the
// object redacted: its status, and its message unless that quotes a
// redacted value. A condition's message often quotes the value its
// controller could not use, and a kind's own CEL may yield any value of
// the object; the message computed from the redacted object differs from
// the real one exactly when the real one depends on a redacted value, and
// then it reads Redacted. nil when the event has no Deriver.
func (p *Prepared) Health() *event.Health {
	if !p.healthDone {
		p.health = redactedHealth(p.Event, false, p.redacted, p.Object)
		p.healthDone = true
	}
	return p.health
}

// Health is Prepared.Health for an event whose objects are shown redacted by
// r outside a payload (audit's findings, test --explain's steps): the
// health of its object, or with old of its old object.
func (r *Redactor) Health(ev *event.Event, old bool) *event.Health {
	obj := ev.Object
	if old {
		obj = ev.OldObject
	}
	if !r.touches(ev.Resource, obj) {
		return ev.HealthOf(old)
	}
	return redactedHealth(ev, old, true, r.Redact(ev.Resource, obj))
}

// HealthField reads a path under health. (rest, without the root) from
// Health's document.
func (r *Redactor) HealthField(ev *event.Event, old bool, rest string) gjson.Result {
	return healthField(r.Health(ev, old), rest)
}

func redactedHealth(ev *event.Event, old, redacted bool, shown []byte) *event.Health {
	h := ev.HealthOf(old)
	if h == nil || !redacted || h.Message == "" {
		return h
	}
	if ev.Deriver.Health(ev.Resource, shown).Message != h.Message {
		return &event.Health{Status: h.Status, Message: Redacted}
	}
	return h
}

// healthField reads a path under health. from h's document.
func healthField(h *event.Health, rest string) gjson.Result {
	if h == nil {
		return gjson.Result{}
	}
	b, _ := json.Marshal(h)
	return gjson.GetBytes(b, rest)
}

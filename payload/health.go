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
		p.health = redactedHealth(p.Event, p.redacted, p.Object)
		p.healthDone = true
	}
	return p.health
}

// Health is Prepared.Health for an event whose object is shown redacted by r
// outside a payload (audit's findings).
func (r *Redactor) Health(ev *event.Event) *event.Health {
	if !r.touches(ev.Resource, ev.Object) {
		return ev.HealthOf(false)
	}
	return redactedHealth(ev, true, r.Redact(ev.Resource, ev.Object))
}

func redactedHealth(ev *event.Event, redacted bool, shown []byte) *event.Health {
	h := ev.HealthOf(false)
	if h == nil || !redacted || h.Message == "" {
		return h
	}
	if ev.Deriver.Health(ev.Resource, shown).Message != h.Message {
		return &event.Health{Status: h.Status, Message: Redacted}
	}
	return h
}

// healthField reads a path under health. from Health's document.
func (p *Prepared) healthField(rest string) gjson.Result {
	h := p.Health()
	if h == nil {
		return gjson.Result{}
	}
	b, _ := json.Marshal(h)
	return gjson.GetBytes(b, rest)
}

package action

import (
	"encoding/json"
	"strings"

	"github.com/dynwatch/dynwatch/event"
)

// CloudEvents 1.0, written by hand: dynwatch makes events, never reads them,
// and the attributes are a fixed handful, so the SDK would bring its protocol
// bindings and their dependencies for what is a dozen lines here.

// ceTypePrefix is what an event's type is prefixed with in its CloudEvents type.
const ceTypePrefix = "io.dynwatch."

// ceAttr is one CloudEvents context attribute, as the bindings write it.
type ceAttr struct{ name, value string }

// DeliveryKey is the single key of one delivery: the event's id and the rule,
// `<id>:<rule>`. A retried delivery keeps it; two rules firing on one event
// are two keys.
func DeliveryKey(p *event.Payload) string { return p.ID + ":" + p.Rule }

// ceAttributes returns the context attributes of d as a CloudEvent from
// source, datacontenttype left out (each binding spells it its own way).
func ceAttributes(d *event.Delivery, source string) []ceAttr {
	if d.Group != nil {
		return ceGroupAttributes(d, source)
	}
	p := d.Payload
	if p.Cluster != "" {
		source = p.Cluster // with several clusters, the source is the event's cluster
	}
	attrs := []ceAttr{
		{"specversion", "1.0"},
		{"id", DeliveryKey(p)},
		{"source", source},
		{"type", ceTypePrefix + string(p.Type)},
		{"subject", APIPath(p)},
	}
	if p.Time != "" { // optional, and never empty when given
		attrs = append(attrs, ceAttr{"time", p.Time})
	}
	attrs = append(attrs, ceAttr{"dynwatchrule", p.Rule})
	if p.Transition != "" {
		attrs = append(attrs, ceAttr{"dynwatchtransition", p.Transition})
	}
	return attrs
}

// ceGroupAttributes are the attributes of a grouped delivery: type
// io.dynwatch.group, id its DeliveryID, time its first event's; no subject
// (the events are of several objects), and dynwatchrule only when every event
// is of one rule.
func ceGroupAttributes(d *event.Delivery, source string) []ceAttr {
	attrs := []ceAttr{
		{"specversion", "1.0"},
		{"id", DeliveryID(d)},
		{"source", source},
		{"type", ceGroupType},
	}
	if t := d.Payload.Time; t != "" {
		attrs = append(attrs, ceAttr{"time", t})
	}
	if r := groupRule(d.Group); r != "" {
		attrs = append(attrs, ceAttr{"dynwatchrule", r})
	}
	return attrs
}

// APIPath is an object's path on the API server:
// /apis/apps/v1/namespaces/prod/deployments/api, /api/v1/namespaces/x/configmaps/y.
func APIPath(p *event.Payload) string {
	var b strings.Builder
	r := p.Resource
	if r.Group == "" {
		b.WriteString("/api/" + r.Version)
	} else {
		b.WriteString("/apis/" + r.Group + "/" + r.Version)
	}
	if p.Namespace != "" {
		b.WriteString("/namespaces/" + p.Namespace)
	}
	b.WriteString("/" + r.Resource + "/" + p.Name)
	return b.String()
}

// ceStructured returns d as a structured-mode CloudEvent: the attributes and
// the payload as data, one JSON object.
func ceStructured(d *event.Delivery, source string) []byte {
	attrs := ceAttributes(d, source)
	out := make([]byte, 0, len(d.JSON)+384)
	out = append(out, '{')
	for _, a := range attrs {
		out = appendJSONString(out, a.name)
		out = append(out, ':')
		out = appendJSONString(out, a.value)
		out = append(out, ',')
	}
	out = append(out, `"datacontenttype":"application/json","data":`...)
	out = append(out, d.JSON...)
	return append(out, '}')
}

// appendJSONString appends s as a JSON string: as it is when it is plain
// printable ASCII (names and ids are), else as encoding/json writes it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			enc, _ := json.Marshal(s) // a string always encodes
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// ceHeaderValue percent-encodes what an HTTP or NATS header value cannot carry
// as is (the HTTP binding's rule: space, '"', '%' and anything outside
// printable ASCII).
func ceHeaderValue(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '%' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '%' {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

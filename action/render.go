package action

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
)

// Rendered is what an action's sender would send for one delivery, made by
// the sender's own rendering (the step its Send takes before sending), with
// nothing sent or dialled: for `dynwatch test --render`.
type Rendered struct {
	// To is where it goes: a webhook's method and URL (scheme and host
	// only: a path often holds a token), a Kafka topic, a NATS subject, a
	// log's file ("stdout"), a command's argv.
	To string
	// Header are the request's headers, the record's or message's headers
	// (a binary-mode CloudEvent's attributes among them), or the command's
	// DYNWATCH_* variables, sorted by name.
	Header []Field
	// Key is a Kafka record's key; "" for the other kinds.
	Key string
	// Body is the request body, the record's value, the message's data, the
	// line a log writes or what a command reads on stdin.
	Body []byte
}

// Field is one header (or variable) and its value.
type Field struct{ Name, Value string }

// renderFunc renders a delivery as a kind's sender would send it.
type renderFunc func(env Env, d *event.Delivery) (*Rendered, error)

// Render returns what the action's sender would send for d, rendered by the
// sender's own code, without sending or connecting. The config's ${VAR}
// values are masked, and so are credential headers (Authorization, a
// token) whatever their value.
func (a *Action) Render(env Env, d *event.Delivery) (*Rendered, error) {
	r, err := a.render(env, d)
	if err != nil {
		return nil, err
	}
	mask := env.Secrets.Mask
	r.To, r.Key, r.Body = mask(r.To), mask(r.Key), []byte(mask(string(r.Body)))
	for i, f := range r.Header {
		r.Header[i].Value = mask(f.Value)
		if config.CredentialName(f.Name) {
			r.Header[i].Value = config.SecretMask
		}
	}
	return r, nil
}

// headerFields lists h's headers, sorted by name.
func headerFields(h http.Header) []Field {
	var out []Field
	for _, k := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[k] {
			out = append(out, Field{k, v})
		}
	}
	return out
}

func renderLog(path string) renderFunc {
	to := path
	if to == "" {
		to = "stdout"
	}
	return func(_ Env, d *event.Delivery) (*Rendered, error) {
		return &Rendered{To: to, Body: logLine(d)}, nil
	}
}

func renderExec(spec *config.ExecSpec) renderFunc {
	to := strings.Join(spec.Command, " ")
	return func(_ Env, d *event.Delivery) (*Rendered, error) {
		r := &Rendered{To: to, Body: logLine(d)}
		for _, kv := range eventEnv(d) {
			k, v, _ := strings.Cut(kv, "=")
			r.Header = append(r.Header, Field{k, v})
		}
		return r, nil
	}
}

func renderWebhook(spec *config.WebhookSpec, reqs webhookRequests) renderFunc {
	to := spec.Method + " " + config.RedactURL(spec.URL)
	return func(env Env, d *event.Delivery) (*Rendered, error) {
		reqs := reqs
		reqs.format = webhookFormat(spec, env.source())
		body, h, err := reqs.request(d)
		if err != nil {
			return nil, err
		}
		return &Rendered{To: to, Header: headerFields(h), Body: body}, nil
	}
}

func renderKafka(spec *config.KafkaSpec, recs kafkaRecords) renderFunc {
	return func(env Env, d *event.Delivery) (*Rendered, error) {
		recs := recs
		recs.ce, recs.source = spec.Format == config.FormatCloudEvents, env.source()
		rec, err := recs.record(d)
		if err != nil {
			return nil, err
		}
		r := &Rendered{To: "topic " + rec.Topic, Key: string(rec.Key), Body: rec.Value}
		for _, h := range rec.Headers {
			r.Header = append(r.Header, Field{h.Key, string(h.Value)})
		}
		slices.SortStableFunc(r.Header, func(a, b Field) int { return strings.Compare(a.Name, b.Name) })
		return r, nil
	}
}

func renderNATS(spec *config.NATSSpec, action string, msgs natsMessages) renderFunc {
	return func(env Env, d *event.Delivery) (*Rendered, error) {
		msgs := msgs
		msgs.ce, msgs.source = spec.Format == config.FormatCloudEvents, env.source()
		msg, err := msgs.message(d)
		if err != nil {
			return nil, err
		}
		h := http.Header(msg.Header).Clone()
		if spec.UsesJetStream() {
			h["Nats-Msg-Id"] = []string{natsMsgID(d, action)} // as the JetStream publish sets it
		}
		return &Rendered{To: "subject " + msg.Subject, Header: headerFields(h), Body: msg.Data}, nil
	}
}

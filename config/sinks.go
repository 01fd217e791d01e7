package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The defaults of the bus sinks.
const (
	DefaultKafkaTO = 10 * time.Second
	DefaultNATSTO  = 10 * time.Second
)

// The formats an action can send an event in.
const (
	FormatJSON        = "json"
	FormatCloudEvents = "cloudevents"
	FormatSlack       = "slack"
	FormatTeams       = "teams"
)

// The CloudEvents modes: the event as the body, or its attributes in headers.
const (
	CEStructured = "structured"
	CEBinary     = "binary"
)

// KeyObject is the kafka key that is the object's identity.
const KeyObject = "object"

// SASLMechanisms are the SASL mechanisms the kafka action speaks.
var SASLMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// KafkaSpec configures the kafka action.
type KafkaSpec struct {
	// Brokers are the seed brokers, host:port; ${VAR} is expanded. Required.
	Brokers []string `yaml:"brokers"`
	// Topic is a topic name or a Go text/template over the event. Required.
	Topic string `yaml:"topic"`
	// Key is "object" (group/resource/namespace/name) or a template. Default: object.
	Key string `yaml:"key"`
	// Format is json (the payload) or cloudevents (binary mode, ce_ headers). Default: json.
	Format string `yaml:"format"`
	// Acks is all or leader. Default: all (and idempotent producing).
	Acks string `yaml:"acks"`
	// TLS turns TLS on when set. Default: plaintext.
	TLS *TLSSpec `yaml:"tls"`
	// SASL authenticates the client. Default: none.
	SASL *SASLSpec `yaml:"sasl"`
	// Timeout for one record's acknowledgement, at least 1s. Default: 10s.
	Timeout *Duration `yaml:"timeout"`
	// Retry policy. Default: as for webhooks.
	Retry *RetrySpec `yaml:"retry"`
}

// SASLSpec is a kafka client's SASL login.
type SASLSpec struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512. Required.
	Mechanism string `yaml:"mechanism"`
	// Username; ${VAR} is expanded. Required.
	Username string `yaml:"username"`
	// Password; ${VAR} is expanded. Default: "".
	Password string `yaml:"password"`
}

// NATSSpec configures the nats action.
type NATSSpec struct {
	// URL is one server URL or several, comma-separated; ${VAR} is expanded. Required.
	URL string `yaml:"url"`
	// Subject is a subject or a Go text/template over the event. Required.
	Subject string `yaml:"subject"`
	// JetStream: publish and wait for the stream's acknowledgement. Default: true.
	JetStream *bool `yaml:"jetstream"`
	// Format is json or cloudevents (binary mode, ce- headers). Default: json.
	Format string `yaml:"format"`
	// Token authenticates with a token; ${VAR} is expanded. Default: none.
	Token string `yaml:"token"`
	// CredsFile is a NATS credentials file (JWT and NKey). Default: none.
	CredsFile string `yaml:"credsFile"`
	// TLS settings. Default: TLS as the URL says, system roots.
	TLS *TLSSpec `yaml:"tls"`
	// Timeout for one publish and its acknowledgement. Default: 10s.
	Timeout *Duration `yaml:"timeout"`
	// Retry policy. Default: as for webhooks.
	Retry *RetrySpec `yaml:"retry"`
}

// CloudEventsSpec configures how a webhook sends CloudEvents.
type CloudEventsSpec struct {
	// Mode is structured (the event as a JSON body) or binary (ce-* headers).
	// Default: structured.
	Mode string `yaml:"mode"`
}

// checkBroker reports a seed broker the client cannot dial: not host:port
// with a port from 1 to 65535 (a host alone gets 9092), or several in one item.
func checkBroker(b string) error {
	if strings.Contains(b, ",") {
		return fmt.Errorf("one broker per list item, got %q", b)
	}
	if b == "" || strings.Contains(b, "://") {
		return fmt.Errorf("want host:port, got %q", b)
	}
	host, port, err := net.SplitHostPort(b)
	if err != nil {
		if strings.Count(b, ":") == 0 {
			return nil // a host alone: the client uses port 9092
		}
		return fmt.Errorf("want host:port, got %q", b)
	}
	if n, err := strconv.Atoi(port); host == "" || err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("want host:port with a port from 1 to 65535, got %q", b)
	}
	return nil
}

// CheckKafkaTopic reports a name Kafka refuses as a topic: empty, "." or
// "..", over 249 characters, or with a character other than ASCII letters,
// digits, '.', '_' and '-'.
func CheckKafkaTopic(t string) error {
	if t == "" || t == "." || t == ".." || len(t) > 249 {
		return fmt.Errorf("%.40q is not a Kafka topic name (1 to 249 characters, not . or ..)", t)
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%.40q is not a Kafka topic name: %q is not a letter, digit, '.', '_' or '-'", t, c)
		}
	}
	return nil
}

// CheckNATSSubject reports a subject no message can be published to: empty,
// with white space or a wildcard, or with an empty token (a leading,
// trailing or doubled '.').
func CheckNATSSubject(s string) error {
	if s == "" || strings.ContainsAny(s, " \t\r\n*>") {
		return fmt.Errorf("a subject to publish to has no spaces or wildcards, got %q", s)
	}
	if strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, "..") {
		return fmt.Errorf("a subject has no empty token (a leading, trailing or doubled '.'), got %q", s)
	}
	return nil
}

// UsesJetStream reports whether the action publishes to JetStream.
func (n *NATSSpec) UsesJetStream() bool { return n.JetStream == nil || *n.JetStream }

func (k *KafkaSpec) retryPolicy() *RetrySpec { return k.Retry }
func (n *NATSSpec) retryPolicy() *RetrySpec  { return n.Retry }

func (k *KafkaSpec) validate(v *validator, p string) {
	if len(k.Brokers) == 0 {
		v.errf(p+".brokers", "required: list at least one broker as host:port")
	}
	for i := range k.Brokers {
		bp := fmt.Sprintf("%s.brokers[%d]", p, i)
		k.Brokers[i] = expandEnv(v, bp, k.Brokers[i])
		if err := checkBroker(k.Brokers[i]); err != nil {
			v.errf(bp, "%v", err)
		}
	}
	if k.Topic == "" {
		v.errf(p+".topic", "required: a topic or a template")
	} else if !strings.Contains(k.Topic, "{{") {
		if err := CheckKafkaTopic(k.Topic); err != nil {
			v.errf(p+".topic", "%v", err)
		}
	}
	if k.Key == "" {
		k.Key = KeyObject
	}
	k.Format = validateFormat(v, p+".format", k.Format, FormatJSON, FormatCloudEvents)
	switch k.Acks {
	case "":
		k.Acks = "all"
	case "all", "leader":
	default:
		v.errf(p+".acks", "unknown acks %q (want all or leader)", k.Acks)
	}
	validateTLS(v, p+".tls", k.TLS)
	if s := k.SASL; s != nil {
		if !slices.Contains(SASLMechanisms, s.Mechanism) {
			v.errf(p+".sasl.mechanism", "unknown SASL mechanism %q (want one of %s)", s.Mechanism, strings.Join(SASLMechanisms, ", "))
		}
		s.Username = expandEnv(v, p+".sasl.username", s.Username)
		s.Password = expandEnv(v, p+".sasl.password", s.Password)
		if s.Username == "" {
			v.errf(p+".sasl.username", "required")
		}
	}
	k.Timeout = orDuration(k.Timeout, DefaultKafkaTO)
	if k.Timeout.Std() < time.Second {
		v.errf(p+".timeout", "must be at least 1s (the client's shortest record timeout)")
	}
	k.Retry = k.Retry.validate(v, p+".retry")
}

func (n *NATSSpec) validate(v *validator, p string) {
	n.URL = expandEnv(v, p+".url", n.URL)
	if n.URL == "" {
		v.errf(p+".url", "required: a nats:// URL, or several comma-separated")
	}
	for _, one := range strings.Split(n.URL, ",") {
		if n.URL == "" {
			break
		}
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil || u.Host == "" || !slices.Contains([]string{"nats", "tls", "ws", "wss"}, u.Scheme) {
			v.errf(p+".url", "want a nats://, tls://, ws:// or wss:// URL, got %q", RedactURL(strings.TrimSpace(one)))
		}
	}
	if n.Subject == "" {
		v.errf(p+".subject", "required: a subject or a template")
	} else if !strings.Contains(n.Subject, "{{") {
		if err := CheckNATSSubject(n.Subject); err != nil {
			v.errf(p+".subject", "%v", err)
		}
	}
	n.Format = validateFormat(v, p+".format", n.Format, FormatJSON, FormatCloudEvents)
	n.Token = expandEnv(v, p+".token", n.Token)
	if n.CredsFile != "" {
		if _, err := os.Stat(n.CredsFile); err != nil {
			v.errf(p+".credsFile", "%v", err)
		}
		if n.Token != "" {
			v.errf(p+".token", "set token or credsFile, not both")
		}
	}
	validateTLS(v, p+".tls", n.TLS)
	n.Timeout = orDuration(n.Timeout, DefaultNATSTO)
	validatePositive(v, p+".timeout", n.Timeout)
	n.Retry = n.Retry.validate(v, p+".retry")
}

// validateWebhookFormat checks a webhook's format and cloudevents mode and
// applies their defaults.
func (w *WebhookSpec) validateFormat(v *validator, p string) {
	w.Format = validateFormat(v, p+".format", w.Format, FormatJSON, FormatCloudEvents, FormatSlack, FormatTeams)
	if w.CloudEvents != nil && w.Format != FormatCloudEvents {
		v.errf(p+".cloudevents", "needs format: cloudevents")
	}
	if w.Format != FormatCloudEvents {
		return
	}
	if w.Body != "" {
		v.errf(p+".body", "cannot be combined with format: cloudevents (the event's data is the payload)")
	}
	if w.CloudEvents == nil {
		w.CloudEvents = &CloudEventsSpec{}
	}
	switch w.CloudEvents.Mode {
	case "":
		w.CloudEvents.Mode = CEStructured
	case CEStructured, CEBinary:
	default:
		v.errf(p+".cloudevents.mode", "unknown mode %q (want structured or binary)", w.CloudEvents.Mode)
	}
}

// validateFormat returns f, or json when it is empty, and reports one that is
// not in allowed.
func validateFormat(v *validator, p, f string, allowed ...string) string {
	if f == "" {
		return FormatJSON
	}
	if !slices.Contains(allowed, f) {
		v.errf(p, "unknown format %q (want one of %s)", f, strings.Join(allowed, ", "))
	}
	return f
}

func validateTLS(v *validator, p string, t *TLSSpec) {
	if t != nil && t.CAFile != "" {
		if _, err := os.Stat(t.CAFile); err != nil {
			v.errf(p+".caFile", "%v", err)
		}
	}
}

func validatePositive(v *validator, p string, d *Duration) {
	if d.Std() <= 0 {
		v.errf(p, "must be more than 0")
	}
}

package config

// The schema of the bus sinks (kafka, nats) and of the formats an action
// sends in; their checks are in validate_sinks.go, their defaults in
// defaults.go.

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

// UsesJetStream reports whether the action publishes to JetStream.
func (n *NATSSpec) UsesJetStream() bool { return n.JetStream == nil || *n.JetStream }

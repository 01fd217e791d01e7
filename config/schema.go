package config

import "slices"

// The onStart modes: what objects that exist at start fire.
const (
	OnStartDiff = "diff"
	OnStartAll  = "all"
	OnStartNone = "none"
)

// The fire modes: on every event the rule holds on, or on transitions.
const (
	FireAlways = "always"
	FireEnter  = "enter"
	FireExit   = "exit"
	FireEdges  = "edges"
)

// EventTypes are the values of a rule's `on`.
var EventTypes = []string{"add", "update", "delete"}

// APIVersion is the only config apiVersion this build reads.
const APIVersion = "dynwatch/v1alpha1"

// Config is the whole config file. Every field's comment gives its
// default; defaults.go applies them, after decoding and before the checks.
type Config struct {
	// APIVersion must be "dynwatch/v1alpha1". Required.
	APIVersion string `yaml:"apiVersion"`
	// Defaults apply to every rule that does not set the same key.
	Defaults Defaults `yaml:"defaults"`
	// State enables restart catch-up and a durable queue. Default: off.
	State *State `yaml:"state"`
	// Server serves /metrics, /healthz and /readyz. Default: off.
	Server *Server `yaml:"server"`
	// LeaderElection makes replicas elect one that acts. Default: off.
	LeaderElection *LeaderElection `yaml:"leaderElection"`
	// Shards split the watched objects among several processes. Default: off,
	// one process watches everything.
	Shards *Shards `yaml:"shards"`
	// Redact lists the paths blanked in every payload and log line, per kind,
	// besides the built-in Secret entry (DefaultRedact). Default: none more.
	Redact []Redaction `yaml:"redact"`
	// RedactSecrets keeps the built-in Secret entry (data, stringData and the
	// last-applied-configuration annotation) in front of Redact; false drops
	// it, and `dynwatch check` warns. Default: true.
	RedactSecrets *bool `yaml:"redactSecrets"`
	// Security says whether actions may send credentials in clear or skip
	// certificate checks. Default: they may, each with a warning.
	Security *Security `yaml:"security"`
	// ShutdownGrace is how long queues drain on SIGTERM. Default: 30s.
	ShutdownGrace *Duration `yaml:"shutdownGrace"`
	// Actions are the named things that rules deliver events to. Required.
	Actions []ActionSpec `yaml:"actions"`
	// Rules select resources and the events of them that fire actions. Required.
	Rules []RuleSpec `yaml:"rules"`
	// Clusters are the clusters watched from one process, each with its own
	// discovery, informers and CRD tracking. Default: none, the command
	// line's kubeconfig is the one cluster and payloads have no cluster key.
	Clusters []ClusterSpec `yaml:"clusters"`
	// Health gives kinds a health of their own, a CEL expression, instead
	// of the generic one (kstatus'). Default: none.
	Health []HealthSpec `yaml:"health"`
}

// ClusterSpec is one watched cluster.
type ClusterSpec struct {
	// Name names the cluster in payloads, metrics and the state file; a
	// DNS label, unique. Required.
	Name string `yaml:"name"`
	// Kubeconfig is the cluster's kubeconfig file. Default: the command
	// line's (--kubeconfig, $KUBECONFIG, ~/.kube/config, in-cluster).
	Kubeconfig string `yaml:"kubeconfig"`
	// Context is the kubeconfig context. Default: the file's current
	// context (or the command line's --context for the command line's file).
	Context string `yaml:"context"`
}

// ClusterNames returns the names of the clusters, in order; nil without
// clusters.
func (c *Config) ClusterNames() []string {
	var out []string
	for _, cl := range c.Clusters {
		out = append(out, cl.Name)
	}
	return out
}

// Defaults are the rule settings that apply where a rule does not set its own.
type Defaults struct {
	// Namespaces is the default of every rule's namespaces. Default: empty, all namespaces.
	Namespaces []string `yaml:"namespaces"`
	// Resync is the informer resync period; resyncs never fire rules. Default: 0, off.
	Resync Duration `yaml:"resync"`
}

// State configures the restart state store.
type State struct {
	// Path is the state file. Required when state is given.
	Path string `yaml:"path"`
}

// Security is what the file allows that exposes a credential or a delivery
// on the network (insecure.go lists each shape).
type Security struct {
	// AllowInsecure: true lets an action send a credential in clear (SASL
	// PLAIN without tls, a NATS token or URL password without TLS, a
	// webhook's credential header, URL user or token parameter on http://)
	// or turn certificate checks off (tls.insecureSkipVerify), each a
	// warning; false makes each a problem, as run's and check's --strict
	// does whatever the file says. Default: true.
	AllowInsecure *bool `yaml:"allowInsecure"`
}

// Server configures the operations HTTP server.
type Server struct {
	// Address to listen on, e.g. ":8080". Default: "", off.
	Address string `yaml:"address"`
	// StallAfter: /readyz fails when a watch saw no event or bookmark this
	// long. Default: 5m.
	StallAfter *Duration `yaml:"stallAfter"`
}

// LeaderElection lets several replicas run with one acting, on a Lease.
type LeaderElection struct {
	// Namespace of the Lease. Required.
	Namespace string `yaml:"namespace"`
	// Name of the Lease. Default: dynwatch.
	Name string `yaml:"name"`
	// LeaseDuration is how long a Lease holds without renewal. Default: 15s.
	LeaseDuration *Duration `yaml:"leaseDuration"`
	// RenewDeadline is how long the leader tries to renew before it stops
	// acting. Default: 10s.
	RenewDeadline *Duration `yaml:"renewDeadline"`
	// RetryPeriod is how often replicas try to acquire or renew. Default: 2s.
	RetryPeriod *Duration `yaml:"retryPeriod"`
}

// The shard keys: what an object's shard is the hash of.
const (
	ShardByUID       = "uid"
	ShardByNamespace = "namespace"
)

// Shards split the watched objects among Count processes that run the same
// config: each keeps, evaluates and records only the objects of its share.
type Shards struct {
	// Count is how many shards there are. Required, at least 1.
	Count int `yaml:"count"`
	// Index is this process's shard, 0 to Count-1. Default: the ordinal of
	// $POD_NAME (a StatefulSet pod "dynwatch-2" is shard 2), read at start.
	Index *int `yaml:"index"`
	// By is what an object's shard is the hash of: uid or namespace.
	// Default: uid.
	By string `yaml:"by"`
}

// Redaction blanks the values at Paths in objects of Kind.
type Redaction struct {
	// Kind is the object kind, e.g. Secret. Required.
	Kind string `yaml:"kind"`
	// Group restricts the entry to one API group. Default: any group.
	Group OptString `yaml:"group"`
	// Paths are dotted gjson paths (no queries or wildcards). Required.
	Paths []string `yaml:"paths"`
}

// ActionSpec is one named action; exactly one of its kinds (Log, Webhook,
// Exec, Kafka, NATS) is set.
type ActionSpec struct {
	// Name is how rules refer to the action. Required, unique.
	Name string `yaml:"name"`
	// Log writes one JSON payload per line.
	Log *LogSpec `yaml:"log"`
	// Webhook sends the payload over HTTP.
	Webhook *WebhookSpec `yaml:"webhook"`
	// Exec runs a command with the payload on stdin.
	Exec *ExecSpec `yaml:"exec"`
	// Kafka produces the payload as a record to a Kafka topic.
	Kafka *KafkaSpec `yaml:"kafka"`
	// NATS publishes the payload to a NATS subject, by default through JetStream.
	NATS *NATSSpec `yaml:"nats"`
	// QueueSize bounds the action's queue. Default: 10000.
	QueueSize int `yaml:"queueSize"`
	// Concurrency is how many objects are delivered in parallel; one object's
	// events stay in order. Default: 4.
	Concurrency int `yaml:"concurrency"`
	// Group batches the action's events into grouped deliveries, as
	// Alertmanager groups alerts. Default: off, one delivery per event.
	Group *GroupSpec `yaml:"group"`
	// RateLimit spaces the action's deliveries; none is dropped. Default: off.
	RateLimit *RateLimitSpec `yaml:"rateLimit"`
}

// LogSpec configures the log action.
type LogSpec struct {
	// Path is a file that lines are appended to. Default: "", stdout.
	Path string `yaml:"path"`
}

// WebhookSpec configures the webhook action.
type WebhookSpec struct {
	// URL to send to, http or https. Required.
	URL string `yaml:"url"`
	// Method is the HTTP method. Default: POST.
	Method string `yaml:"method"`
	// Headers are sent with every request; ${VAR} is expanded from the
	// environment at load time. X-Dynwatch-* cannot be set (dynwatch sets
	// them per delivery). Default: none.
	Headers map[string]string `yaml:"headers"`
	// Body is a Go text/template over the event. Default: "", the event JSON.
	Body string `yaml:"body"`
	// Timeout for one attempt; must be positive. Default: 10s.
	Timeout *Duration `yaml:"timeout"`
	// Retry policy. Default: max 10, initialBackoff 1s, maxBackoff 5m.
	Retry *RetrySpec `yaml:"retry"`
	// TLS settings. Default: system roots, verification on.
	TLS *TLSSpec `yaml:"tls"`
	// Format is json (the payload), cloudevents, slack or teams; a body
	// template replaces a slack or teams message. Default: json.
	Format string `yaml:"format"`
	// CloudEvents configures format: cloudevents. Default: structured mode.
	CloudEvents *CloudEventsSpec `yaml:"cloudevents"`
}

// RetrySpec is an exponential backoff policy with jitter.
type RetrySpec struct {
	// Max is how many times one event may fail after its first attempt while
	// the receiver takes other events; failures while the whole action is
	// down count against the outage, not against this. Default: 10.
	Max *int `yaml:"max"`
	// InitialBackoff is the first wait. Default: 1s.
	InitialBackoff *Duration `yaml:"initialBackoff"`
	// MaxBackoff caps every wait. Default: 5m.
	MaxBackoff *Duration `yaml:"maxBackoff"`
}

// TLSSpec configures a webhook's TLS client.
type TLSSpec struct {
	// CAFile is a PEM bundle trusted in addition to nothing else. Default: system roots.
	CAFile string `yaml:"caFile"`
	// InsecureSkipVerify turns certificate checks off. Default: false.
	InsecureSkipVerify bool `yaml:"insecureSkipVerify"`
}

// ExecSpec configures the exec action.
type ExecSpec struct {
	// Command is the argv; it is never run through a shell. Required.
	Command []string `yaml:"command"`
	// Timeout kills the command's process group; must be positive. Default: 30s.
	Timeout *Duration `yaml:"timeout"`
	// Env is added to the command's environment, which is otherwise only
	// PATH, HOME, TMPDIR, TZ, LANG and LC_ALL (as dynwatch has them) and the
	// DYNWATCH_* variables; ${VAR} is expanded from dynwatch's environment at
	// load time. Names starting with DYNWATCH_ are dynwatch's. Default: none.
	Env map[string]string `yaml:"env"`
	// Retry policy for non-zero exits. Default: as for webhooks.
	Retry *RetrySpec `yaml:"retry"`
}

// RuleSpec is one rule as written in the file.
type RuleSpec struct {
	// Name is the rule's unique name. Required.
	Name string `yaml:"name"`
	// Resources select resources from discovery. Required.
	Resources []Selector `yaml:"resources"`
	// Namespaces to watch; ignored for cluster-scoped resources. Default:
	// defaults.namespaces.
	Namespaces []string `yaml:"namespaces"`
	// LabelSelector in Kubernetes syntax. Default: "", everything.
	LabelSelector string `yaml:"labelSelector"`
	// On lists the event types that fire. Default: add, update, delete.
	On []string `yaml:"on"`
	// When lists conditions that must all hold. Default: none, always.
	When []ConditionSpec `yaml:"when"`
	// Changed: updates fire only if a value at one of these paths differs.
	// Default: none, every update.
	Changed []string `yaml:"changed"`
	// Fields are projected into the payload: name -> gjson path. Default: none.
	Fields map[string]string `yaml:"fields"`
	// OnStart says what objects that exist at start fire: diff, all or none.
	// Default: diff with state.path, none without.
	OnStart string `yaml:"onStart"`
	// Fire is always (every event the rule holds on), enter (when its
	// conditions start to hold), exit (when they stop) or edges (both, with
	// the payload's transition). Default: always.
	Fire string `yaml:"fire"`
	// For: with fire enter or edges, the conditions must hold this long,
	// continuously, before enter fires. Default: 0s, at once.
	For *Duration `yaml:"for"`
	// KeepFiringFor: with fire exit or edges, the conditions must have
	// stopped holding this long before exit fires. Default: 0s, at once.
	KeepFiringFor *Duration `yaml:"keepFiringFor"`
	// Actions are the names of the actions to deliver to. Required.
	Actions []string `yaml:"actions"`
	// Clusters names the clusters (of the top-level clusters) the rule
	// applies to. Default: every cluster.
	Clusters []string `yaml:"clusters"`
}

// AppliesTo reports whether the rule applies to the named cluster ("" is
// the one cluster without clusters, to which every rule applies).
func (rs *RuleSpec) AppliesTo(cluster string) bool {
	return cluster == "" || len(rs.Clusters) == 0 || slices.Contains(rs.Clusters, cluster)
}

// Selector selects resources from discovery. Group, Version, Resource and Kind
// accept glob patterns.
type Selector struct {
	// Group is the API group; "" is the core group. Default: any group.
	Group OptString `yaml:"group"`
	// Version. Default: the group's preferred version.
	Version string `yaml:"version"`
	// Resource is the plural resource name. One of resource and kind is required.
	Resource string `yaml:"resource"`
	// Kind is the object kind. One of resource and kind is required.
	Kind string `yaml:"kind"`
}

// ConditionSpec is one `when` entry.
type ConditionSpec struct {
	// CEL is a CEL expression over object and oldObject (null on add and
	// delete) that must be true; it replaces path, op and value.
	CEL string `yaml:"cel"`
	// Path is a gjson path into the object. Required unless cel is given.
	Path string `yaml:"path"`
	// Op is the operator: its name (gt) or its symbol (>, as tail --where
	// takes it). Required.
	Op string `yaml:"op"`
	// Value to compare with; typed. Required except for exists and notExists.
	Value Value `yaml:"value"`
	// Object is new or old (updates only). Default: new.
	Object string `yaml:"object"`
}

// GroupByLabels are the labels a group's `by` may list: the event's rule,
// namespace, name, kind, resource (resource.group), cluster, type (add,
// update, delete) and transition (enter, exit).
var GroupByLabels = []string{"rule", "namespace", "name", "kind", "resource", "cluster", "type", "transition"}

// GroupSpec is an action's group: the events with the same values of By form
// one group, delivered as one payload {"group", "count", "events"}.
type GroupSpec struct {
	// By are the labels whose values name a group (GroupByLabels). Default:
	// none, one group for all of the action's events (as Alertmanager's
	// group_by: []).
	By []string `yaml:"by"`
	// Wait is how long the first event of a new group waits for others
	// (group_wait). Default: 30s.
	Wait *Duration `yaml:"wait"`
	// Interval is how long, after a group was delivered, its next events wait
	// (group_interval). Default: 5m.
	Interval *Duration `yaml:"interval"`
	// Max is the most events one delivery holds; a larger group is split, in
	// order. Default: 100.
	Max *int `yaml:"max"`
}

// RateLimitSpec is a token bucket that spaces an action's deliveries (a
// grouped delivery counts once); deliveries wait, none is dropped.
type RateLimitSpec struct {
	// PerSecond is the rate tokens come back at; fractions allowed (0.1: one
	// every 10s). Required.
	PerSecond float64 `yaml:"perSecond"`
	// Burst is how many deliveries may go at once after a quiet spell.
	// Default: 1.
	Burst *int `yaml:"burst"`
}

// Action returns the named action spec, or nil.
func (c *Config) Action(name string) *ActionSpec {
	for i := range c.Actions {
		if c.Actions[i].Name == name {
			return &c.Actions[i]
		}
	}
	return nil
}

// StateEnabled reports whether restart state is configured.
func (c *Config) StateEnabled() bool { return c.State != nil && c.State.Path != "" }

// HealthSpec is a kind's own health: a CEL expression over object that
// yields one of Current, InProgress, Failed, Terminating or Unknown (or a map
// with status and message).
type HealthSpec struct {
	// Group of the kind ("" is the core group). Required for a kind outside
	// the core group.
	Group string `yaml:"group"`
	// Kind the expression is the health of. Required.
	Kind string `yaml:"kind"`
	// CEL is the expression. Required.
	CEL string `yaml:"cel"`
}

package config

import (
	"slices"
	"time"
)

// The defaults of the config file: what the defaults step fills in where the
// file leaves a key out. Each field's comment in the schema names its default.
const (
	// DefaultShutdownGrace is shutdownGrace.
	DefaultShutdownGrace = 30 * time.Second
	// DefaultStallAfter is server.stallAfter.
	DefaultStallAfter = 5 * time.Minute
	// DefaultShardBy is shards.by.
	DefaultShardBy = ShardByUID

	// DefaultLeaseName is leaderElection.name.
	DefaultLeaseName = "dynwatch"
	// DefaultLeaseDuration is leaderElection.leaseDuration.
	DefaultLeaseDuration = 15 * time.Second
	// DefaultRenewDeadline is leaderElection.renewDeadline.
	DefaultRenewDeadline = 10 * time.Second
	// DefaultRetryPeriod is leaderElection.retryPeriod.
	DefaultRetryPeriod = 2 * time.Second

	// DefaultQueueSize is an action's queueSize.
	DefaultQueueSize = 10000
	// DefaultConcurrency is an action's concurrency.
	DefaultConcurrency = 4

	// DefaultMaxRetries is retry.max, for every action kind.
	DefaultMaxRetries = 10
	// DefaultInitialBackoff is retry.initialBackoff.
	DefaultInitialBackoff = time.Second
	// DefaultMaxBackoff is retry.maxBackoff.
	DefaultMaxBackoff = 5 * time.Minute

	// DefaultFormat is the format of the webhook, kafka and nats actions.
	DefaultFormat = FormatJSON
	// DefaultWebhookMethod is webhook.method.
	DefaultWebhookMethod = "POST"
	// DefaultWebhookTimeout is webhook.timeout.
	DefaultWebhookTimeout = 10 * time.Second
	// DefaultCloudEventsMode is webhook.cloudevents.mode.
	DefaultCloudEventsMode = CEStructured
	// DefaultExecTimeout is exec.timeout.
	DefaultExecTimeout = 30 * time.Second
	// DefaultKafkaKey is kafka.key.
	DefaultKafkaKey = KeyObject
	// DefaultKafkaAcks is kafka.acks.
	DefaultKafkaAcks = "all"
	// DefaultKafkaTimeout is kafka.timeout.
	DefaultKafkaTimeout = 10 * time.Second
	// DefaultNATSTimeout is nats.timeout.
	DefaultNATSTimeout = 10 * time.Second

	// DefaultFire is a rule's fire.
	DefaultFire = FireAlways

	// DefaultGroupWait is group.wait: Alertmanager's group_wait.
	DefaultGroupWait = 30 * time.Second
	// DefaultGroupInterval is group.interval: Alertmanager's group_interval.
	DefaultGroupInterval = 5 * time.Minute
	// DefaultGroupMax is group.max.
	DefaultGroupMax = 100
	// DefaultRateLimitBurst is rateLimit.burst: one delivery at a time,
	// spaced 1/perSecond apart.
	DefaultRateLimitBurst = 1
)

// LastAppliedPath is the annotation in which kubectl apply keeps the object
// as applied: a copy of every value a redact entry blanks, so every entry
// blanks it too.
const LastAppliedPath = `metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration`

// DefaultRedact is the built-in redact list: a Secret's data and stringData, and
// the last-applied-configuration annotation that `kubectl apply` leaves on it,
// which holds the same values in clear.
func DefaultRedact() []Redaction {
	return []Redaction{{
		Kind:  "Secret",
		Group: OptString{Set: true},
		Paths: []string{"data", "stringData", LastAppliedPath},
	}}
}

// applyDefaults is the defaults step: it runs once, after decoding and before
// the checks, and fills in every key the file leaves out with its Default…
// value. It reports nothing; a value the file gives is the checks' to judge.
func (c *Config) applyDefaults() {
	c.ShutdownGrace = orDuration(c.ShutdownGrace, DefaultShutdownGrace)
	if c.Server != nil {
		c.Server.StallAfter = orDuration(c.Server.StallAfter, DefaultStallAfter)
	}
	if l := c.LeaderElection; l != nil {
		l.Name = orString(l.Name, DefaultLeaseName)
		l.LeaseDuration = orDuration(l.LeaseDuration, DefaultLeaseDuration)
		l.RenewDeadline = orDuration(l.RenewDeadline, DefaultRenewDeadline)
		l.RetryPeriod = orDuration(l.RetryPeriod, DefaultRetryPeriod)
	}
	if c.Shards != nil {
		c.Shards.By = orString(c.Shards.By, DefaultShardBy)
	}
	if c.RedactSecrets == nil || *c.RedactSecrets {
		c.Redact = append(DefaultRedact(), c.Redact...)
	}
	for i := range c.Actions {
		c.Actions[i].applyDefaults()
	}
	for i := range c.Rules {
		c.Rules[i].applyDefaults(c.StateEnabled())
	}
}

// writtenRedact returns the redact entries the file wrote, without the
// built-in one the defaults step puts first, and the index of the first.
func (c *Config) writtenRedact() ([]Redaction, int) {
	first := 1
	if rs := c.RedactSecrets; rs != nil && !*rs {
		first = 0
	}
	return c.Redact[min(first, len(c.Redact)):], first
}

func (a *ActionSpec) applyDefaults() {
	if a.QueueSize == 0 {
		a.QueueSize = DefaultQueueSize
	}
	if a.Concurrency == 0 {
		a.Concurrency = DefaultConcurrency
	}
	for _, k := range a.kinds() {
		if k.set {
			k.spec.applyDefaults()
		}
	}
	if g := a.Group; g != nil {
		g.Wait = orDuration(g.Wait, DefaultGroupWait)
		g.Interval = orDuration(g.Interval, DefaultGroupInterval)
		g.Max = orInt(g.Max, DefaultGroupMax)
	}
	if r := a.RateLimit; r != nil {
		r.Burst = orInt(r.Burst, DefaultRateLimitBurst)
	}
}

func (l *LogSpec) applyDefaults() {}

func (w *WebhookSpec) applyDefaults() {
	w.Method = orString(w.Method, DefaultWebhookMethod)
	w.Timeout = orDuration(w.Timeout, DefaultWebhookTimeout)
	w.Retry = withDefaults(w.Retry)
	w.Format = orString(w.Format, DefaultFormat)
	if w.Format == FormatCloudEvents {
		if w.CloudEvents == nil {
			w.CloudEvents = &CloudEventsSpec{}
		}
		w.CloudEvents.Mode = orString(w.CloudEvents.Mode, DefaultCloudEventsMode)
	}
}

func (e *ExecSpec) applyDefaults() {
	e.Timeout = orDuration(e.Timeout, DefaultExecTimeout)
	e.Retry = withDefaults(e.Retry)
}

func (k *KafkaSpec) applyDefaults() {
	k.Key = orString(k.Key, DefaultKafkaKey)
	k.Format = orString(k.Format, DefaultFormat)
	k.Acks = orString(k.Acks, DefaultKafkaAcks)
	k.Timeout = orDuration(k.Timeout, DefaultKafkaTimeout)
	k.Retry = withDefaults(k.Retry)
}

func (n *NATSSpec) applyDefaults() {
	n.Format = orString(n.Format, DefaultFormat)
	n.Timeout = orDuration(n.Timeout, DefaultNATSTimeout)
	n.Retry = withDefaults(n.Retry)
}

// withDefaults returns r with its defaults applied; a nil r is all defaults.
func withDefaults(r *RetrySpec) *RetrySpec {
	if r == nil {
		r = &RetrySpec{}
	}
	r.applyDefaults()
	return r
}

func (r *RetrySpec) applyDefaults() {
	if r.Max == nil {
		m := DefaultMaxRetries
		r.Max = &m
	}
	r.InitialBackoff = orDuration(r.InitialBackoff, DefaultInitialBackoff)
	r.MaxBackoff = orDuration(r.MaxBackoff, DefaultMaxBackoff)
}

// applyDefaults fills in onStart (diff with state, none without), fire and
// the waits (for, keepFiringFor: none).
func (rs *RuleSpec) applyDefaults(state bool) {
	if rs.OnStart == "" {
		rs.OnStart = OnStartNone
		if state {
			rs.OnStart = OnStartDiff
		}
	}
	rs.Fire = orString(rs.Fire, DefaultFire)
	rs.For = orDuration(rs.For, 0)
	rs.KeepFiringFor = orDuration(rs.KeepFiringFor, 0)
}

// inheritDefaults gives each rule what the file's defaults: section says for
// a key the rule leaves out, and keeps a rule's namespaces as a sorted set.
// It runs after the checks: they judge each namespace once, where the file
// wrote it, at the index it has there.
func (c *Config) inheritDefaults() {
	for i := range c.Rules {
		rs := &c.Rules[i]
		if rs.Namespaces == nil {
			rs.Namespaces = c.Defaults.Namespaces
		}
		if len(rs.Namespaces) > 0 {
			rs.Namespaces = slices.Compact(slices.Sorted(slices.Values(rs.Namespaces)))
		}
	}
}

func orDuration(d *Duration, def time.Duration) *Duration {
	if d == nil {
		v := Duration(def)
		return &v
	}
	return d
}

func orInt(i *int, def int) *int {
	if i == nil {
		return &def
	}
	return i
}

func orString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

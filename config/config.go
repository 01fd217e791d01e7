package config

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dynwatch/dynwatch/fieldpath"
)

// The defaults of the config file.
const (
	DefaultQueueSize     = 10000
	DefaultConcurrency   = 4
	DefaultShutdownGrace = 30 * time.Second
	DefaultWebhookTO     = 10 * time.Second
	DefaultExecTO        = 30 * time.Second
	DefaultRetryMax      = 10
	DefaultInitialBO     = time.Second
	DefaultMaxBO         = 5 * time.Minute
	DefaultStallAfter    = 5 * time.Minute
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

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
// default; defaults are applied by Load, not here.
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
	// Redact lists the paths blanked in every payload and log line, per kind,
	// besides the built-in Secret entry (DefaultRedact). Default: none more.
	Redact []Redaction `yaml:"redact"`
	// RedactSecrets keeps the built-in Secret entry (data, stringData and the
	// last-applied-configuration annotation) in front of Redact; false drops
	// it, and `dynwatch check` warns. Default: true.
	RedactSecrets *bool `yaml:"redactSecrets"`
	// ShutdownGrace is how long queues drain on SIGTERM. Default: 30s.
	ShutdownGrace *Duration `yaml:"shutdownGrace"`
	// Actions are the named things that rules deliver events to. Required.
	Actions []ActionSpec `yaml:"actions"`
	// Rules select resources and the events of them that fire actions. Required.
	Rules []RuleSpec `yaml:"rules"`
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
	// Max is the number of retries after the first attempt. Default: 10.
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
	// Actions are the names of the actions to deliver to. Required.
	Actions []string `yaml:"actions"`
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
	// Op is the operator. Required.
	Op string `yaml:"op"`
	// Value to compare with; typed. Required except for exists and notExists.
	Value Value `yaml:"value"`
	// Object is new or old (updates only). Default: new.
	Object string `yaml:"object"`
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

func (c *Config) validate(v *validator) {
	switch {
	case c.APIVersion == "":
		v.errf("apiVersion", "required: set apiVersion: %s", APIVersion)
	case c.APIVersion != APIVersion:
		v.errf("apiVersion", "unsupported apiVersion %q (want %s)", c.APIVersion, APIVersion)
	}
	validateNamespaces(v, "defaults.namespaces", c.Defaults.Namespaces)
	if c.State != nil && c.State.Path == "" {
		v.errf("state.path", "required when state is given")
	}
	if c.Server != nil {
		c.Server.StallAfter = orDuration(c.Server.StallAfter, DefaultStallAfter)
	}
	if c.LeaderElection != nil {
		c.LeaderElection.validate(v, "leaderElection")
	}
	if c.ShutdownGrace == nil {
		g := Duration(DefaultShutdownGrace)
		c.ShutdownGrace = &g
	}
	for i := range c.Redact {
		c.Redact[i].validate(v, fmt.Sprintf("redact[%d]", i))
	}
	if c.RedactSecrets == nil || *c.RedactSecrets {
		c.Redact = append(DefaultRedact(), c.Redact...)
	}
	if len(c.Actions) == 0 {
		v.errf("actions", "required: define at least one action")
	}
	seen := map[string]int{}
	for i := range c.Actions {
		p := fmt.Sprintf("actions[%d]", i)
		c.Actions[i].validate(v, p)
		checkUnique(v, p, "action", c.Actions[i].Name, seen, i)
	}
	if len(c.Rules) == 0 {
		v.errf("rules", "required: define at least one rule")
	}
	seen = map[string]int{}
	for i := range c.Rules {
		p := fmt.Sprintf("rules[%d]", i)
		c.Rules[i].validate(v, p, c)
		checkUnique(v, p, "rule", c.Rules[i].Name, seen, i)
	}
}

// checkUnique reports a missing or repeated name; seen maps names to 1+index.
func checkUnique(v *validator, p, what, name string, seen map[string]int, i int) {
	switch {
	case name == "":
		v.errf(p+".name", "required")
	case seen[name] > 0:
		v.errf(p+".name", "duplicate %s name %q (first defined at %ss[%d])", what, name, what, seen[name]-1)
	default:
		seen[name] = i + 1
	}
}

func validateNamespaces(v *validator, path string, nss []string) {
	for i, ns := range nss {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			v.errf(fmt.Sprintf("%s[%d]", path, i), "invalid namespace %q: %s", ns, errs[0])
		}
	}
}

func (l *LeaderElection) validate(v *validator, p string) {
	if l.Namespace == "" {
		v.errf(p+".namespace", "required: the namespace of the Lease")
	} else {
		validateNamespaces(v, p+".namespace", []string{l.Namespace})
	}
	if l.Name == "" {
		l.Name = "dynwatch"
	} else if errs := validation.IsDNS1123Subdomain(l.Name); len(errs) > 0 {
		v.errf(p+".name", "invalid Lease name %q: %s", l.Name, errs[0])
	}
	l.LeaseDuration = orDuration(l.LeaseDuration, DefaultLeaseDuration)
	l.RenewDeadline = orDuration(l.RenewDeadline, DefaultRenewDeadline)
	l.RetryPeriod = orDuration(l.RetryPeriod, DefaultRetryPeriod)
	switch {
	case *l.RenewDeadline >= *l.LeaseDuration:
		v.errf(p+".renewDeadline", "must be less than leaseDuration")
	case *l.RetryPeriod >= *l.RenewDeadline:
		v.errf(p+".retryPeriod", "must be less than renewDeadline")
	}
}

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

func (r *Redaction) validate(v *validator, p string) {
	if r.Kind == "" {
		v.errf(p+".kind", "required")
	}
	if len(r.Paths) == 0 {
		v.errf(p+".paths", "required: list the paths to blank")
	}
	for j, rp := range r.Paths {
		if err := fieldpath.CheckPlain(rp); err != nil {
			v.errf(fmt.Sprintf("%s.paths[%d]", p, j), "%v", err)
		}
	}
}

// Kinds returns the names of the action kinds set on a (exactly one is valid),
// in the order ActionSpec declares them.
func (a *ActionSpec) Kinds() []string {
	var out []string
	for _, k := range a.kinds() {
		if k.set {
			out = append(out, k.name)
		}
	}
	return out
}

// kind is one action kind's key and whether it is set: the one list of kinds
// the schema has (a new kind is a field above and a row here).
type kind struct {
	name string
	set  bool
	spec interface{ validate(*validator, string) }
}

func (a *ActionSpec) kinds() []kind {
	return []kind{
		{"log", a.Log != nil, a.Log},
		{"webhook", a.Webhook != nil, a.Webhook},
		{"exec", a.Exec != nil, a.Exec},
		{"kafka", a.Kafka != nil, a.Kafka},
		{"nats", a.NATS != nil, a.NATS},
	}
}

// Kind returns the name of the action's kind ("" unless exactly one is set).
func (a *ActionSpec) Kind() string {
	if ks := a.Kinds(); len(ks) == 1 {
		return ks[0]
	}
	return ""
}

// retrier is a kind spec with a retry key.
type retrier interface{ retryPolicy() *RetrySpec }

// RetryPolicy returns the action's retry policy with its defaults applied; the
// log action, which has no retry key, gets the defaults.
func (a *ActionSpec) RetryPolicy() RetrySpec {
	for _, k := range a.kinds() {
		if r, ok := k.spec.(retrier); ok && k.set && r.retryPolicy() != nil {
			return *r.retryPolicy()
		}
	}
	var r RetrySpec
	r.applyDefaults()
	return r
}

func (a *ActionSpec) validate(v *validator, p string) {
	kinds := 0
	for _, k := range a.kinds() {
		if k.set {
			kinds++
			k.spec.validate(v, p+"."+k.name)
		}
	}
	if kinds != 1 {
		names := make([]string, 0, 5)
		for _, k := range a.kinds() {
			names = append(names, k.name)
		}
		list := strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
		v.errf(p, "set exactly one of %s (found %d)", list, kinds)
	}
	if a.QueueSize < 0 {
		v.errf(p+".queueSize", "must not be negative")
	} else if a.QueueSize == 0 {
		a.QueueSize = DefaultQueueSize
	}
	if a.Concurrency < 0 {
		v.errf(p+".concurrency", "must not be negative")
	} else if a.Concurrency == 0 {
		a.Concurrency = DefaultConcurrency
	}
}

func (l *LogSpec) validate(*validator, string) {}

var envRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandEnv replaces ${VAR} in s from the environment and reports each variable
// that is not set at p.
func expandEnv(v *validator, p, s string) string {
	var missing []string
	out := envRE.ReplaceAllStringFunc(s, func(m string) string {
		name := envRE.FindStringSubmatch(m)[1]
		val, ok := os.LookupEnv(name)
		if !ok {
			missing = append(missing, name)
		}
		return val
	})
	for _, name := range missing {
		if v.unsetEnvWarns {
			v.warnUnsetEnv(p, name)
			continue
		}
		v.errf(p, "environment variable %s is not set", name)
	}
	return out
}

func (w *WebhookSpec) validate(v *validator, p string) {
	w.URL = expandEnv(v, p+".url", w.URL)
	if w.URL == "" {
		v.errf(p+".url", "required")
	} else if u, err := url.Parse(w.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.errf(p+".url", "want an absolute http or https URL, got %q", RedactURL(w.URL))
	}
	if w.Method == "" {
		w.Method = "POST"
	} else if strings.ToUpper(w.Method) != w.Method || strings.ContainsAny(w.Method, " \t/") {
		v.errf(p+".method", "want an upper-case HTTP method such as POST, got %q", w.Method)
	}
	w.validateHeaders(v, p+".headers")
	w.Timeout = positive(v, p+".timeout", orDuration(w.Timeout, DefaultWebhookTO))
	w.Retry = w.Retry.validate(v, p+".retry")
	w.validateFormat(v, p)
	if w.TLS != nil && w.TLS.CAFile != "" {
		if _, err := os.Stat(w.TLS.CAFile); err != nil {
			v.errf(p+".tls.caFile", "%v", err)
		}
	}
}

func (w *WebhookSpec) retryPolicy() *RetrySpec { return w.Retry }
func (e *ExecSpec) retryPolicy() *RetrySpec    { return e.Retry }

func (e *ExecSpec) validate(v *validator, p string) {
	if len(e.Command) == 0 || e.Command[0] == "" {
		v.errf(p+".command", "required: the program and its arguments as a list")
	}
	e.Timeout = positive(v, p+".timeout", orDuration(e.Timeout, DefaultExecTO))
	e.validateEnv(v, p+".env")
	e.Retry = e.Retry.validate(v, p+".retry")
}

// validate applies the defaults to r (a nil r is all defaults) and returns it.
func (r *RetrySpec) validate(v *validator, p string) *RetrySpec {
	if r == nil {
		r = &RetrySpec{}
	}
	if r.Max != nil && *r.Max < 0 {
		v.errf(p+".max", "must not be negative")
	}
	r.applyDefaults()
	if *r.MaxBackoff < *r.InitialBackoff {
		v.errf(p+".maxBackoff", "must not be less than initialBackoff")
	}
	return r
}

func (r *RetrySpec) applyDefaults() {
	if r.Max == nil {
		m := DefaultRetryMax
		r.Max = &m
	}
	r.InitialBackoff = orDuration(r.InitialBackoff, DefaultInitialBO)
	r.MaxBackoff = orDuration(r.MaxBackoff, DefaultMaxBO)
}

func orDuration(d *Duration, def time.Duration) *Duration {
	if d == nil {
		v := Duration(def)
		return &v
	}
	return d
}

// validate checks what the rule says that needs nothing but the file: names,
// namespaces, event types, onStart and actions. Its resources, label selector,
// paths and conditions are compiled, and checked, by package rules.
func (rs *RuleSpec) validate(v *validator, p string, c *Config) {
	if len(rs.Resources) == 0 {
		v.errf(p+".resources", "required: select at least one resource")
	}
	for j := range rs.Resources {
		rs.Resources[j].validate(v, fmt.Sprintf("%s.resources[%d]", p, j))
	}
	if rs.Namespaces == nil {
		rs.Namespaces = c.Defaults.Namespaces
	} else {
		validateNamespaces(v, p+".namespaces", rs.Namespaces)
	}
	if len(rs.Namespaces) > 0 {
		rs.Namespaces = slices.Compact(slices.Sorted(slices.Values(rs.Namespaces)))
	}
	for j, t := range rs.On {
		if !slices.Contains(EventTypes, t) {
			v.errf(fmt.Sprintf("%s.on[%d]", p, j), "unknown event type %q (want one of %s)", t, strings.Join(EventTypes, ", "))
		}
	}
	rs.validateOnStart(v, p, c.StateEnabled())
	switch rs.Fire {
	case "":
		rs.Fire = FireAlways
	case FireAlways, FireEnter, FireExit, FireEdges:
		if rs.Fire != FireAlways {
			for j, cs := range rs.When {
				if cs.Object == "old" {
					v.errf(fmt.Sprintf("%s.when[%d].object", p, j), "object: old cannot be combined with fire: %s (transitions compare the conditions on the old and the new object)", rs.Fire)
				}
			}
		}
	default:
		v.errf(p+".fire", "unknown fire %q (want one of always, enter, exit, edges)", rs.Fire)
	}
	if len(rs.Actions) == 0 {
		v.errf(p+".actions", "required: name at least one action")
	}
	for j, a := range rs.Actions {
		if c.Action(a) == nil {
			v.errf(fmt.Sprintf("%s.actions[%d]", p, j), "undefined action %q (define it under actions)", a)
		}
	}
}

// validateOnStart resolves onStart's default: diff with state, none without.
func (rs *RuleSpec) validateOnStart(v *validator, p string, state bool) {
	switch rs.OnStart {
	case "":
		rs.OnStart = OnStartNone
		if state {
			rs.OnStart = OnStartDiff
		}
	case OnStartDiff:
		if !state {
			v.errf(p+".onStart", "diff needs state.path: set state.path, or use all or none")
		}
	case OnStartAll, OnStartNone:
	default:
		v.errf(p+".onStart", "unknown onStart %q (want one of diff, all, none)", rs.OnStart)
	}
}

package config

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dynwatch/dynwatch/fieldpath"
)

// The checks: each type judges its own fields, after the defaults step
// (defaults.go) has filled in what the file leaves out, and changes nothing.
// Each reports every problem it finds, at the field's path, in the order the
// type declares its fields (Problems.Sorted keeps that order within a line).

// validator collects the problems that types find in themselves.
type validator struct {
	file     *File
	problems Problems
	// unsetEnvWarns, envWarnings, envUnset: see Options.UnsetEnvWarns.
	unsetEnvWarns bool
	envWarnings   Problems
	envUnset      map[string]bool
	// envProblems are the unset variables of each field path, found by the
	// expansion step and reported by reportEnv where the field is checked.
	envProblems map[string]Problems
	// expanded are the values ${VAR}s took, for File.Secrets.
	expanded []string
}

func (v *validator) errf(path, format string, args ...any) {
	if v.envUnset[path] {
		return // its value is not known offline: not judged
	}
	v.problems = append(v.problems, v.file.Problem(path, format, args...))
}

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
	if c.LeaderElection != nil {
		c.LeaderElection.validate(v, "leaderElection")
	}
	if c.Shards != nil {
		c.Shards.validate(v, "shards")
	}
	written, _ := c.writtenRedact()
	for i := range written {
		written[i].validate(v, fmt.Sprintf("redact[%d]", i))
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
	c.validateClusters(v)
	c.validateHealth(v)
	v.reportEnvLeft()
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
	if errs := validation.IsDNS1123Subdomain(l.Name); len(errs) > 0 {
		v.errf(p+".name", "invalid Lease name %q: %s", l.Name, errs[0])
	}
	switch {
	case *l.RenewDeadline >= *l.LeaseDuration:
		v.errf(p+".renewDeadline", "must be less than leaseDuration")
	case *l.RetryPeriod >= *l.RenewDeadline:
		v.errf(p+".retryPeriod", "must be less than renewDeadline")
	}
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
	}
	if a.Concurrency < 0 {
		v.errf(p+".concurrency", "must not be negative")
	}
	a.Group.validate(v, p+".group")
	a.RateLimit.validate(v, p+".rateLimit")
}

func (l *LogSpec) validate(*validator, string) {}

func (w *WebhookSpec) validate(v *validator, p string) {
	v.reportEnv(p + ".url")
	if w.URL == "" {
		v.errf(p+".url", "required")
	} else if u, err := url.Parse(w.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.errf(p+".url", "want an absolute http or https URL, got %q", RedactURL(w.URL))
	}
	if strings.ToUpper(w.Method) != w.Method || strings.ContainsAny(w.Method, " \t/") {
		v.errf(p+".method", "want an upper-case HTTP method such as POST, got %q", w.Method)
	}
	w.validateHeaders(v, p+".headers")
	positive(v, p+".timeout", w.Timeout)
	w.Retry.validate(v, p+".retry")
	w.validateFormat(v, p)
	validateTLS(v, p+".tls", w.TLS)
}

// validateFormat checks a webhook's format and its cloudevents mode.
func (w *WebhookSpec) validateFormat(v *validator, p string) {
	checkFormat(v, p+".format", w.Format, FormatJSON, FormatCloudEvents, FormatSlack, FormatTeams)
	if w.CloudEvents != nil && w.Format != FormatCloudEvents {
		v.errf(p+".cloudevents", "needs format: cloudevents")
	}
	if w.Format != FormatCloudEvents {
		return
	}
	if w.Body != "" {
		v.errf(p+".body", "cannot be combined with format: cloudevents (the event's data is the payload)")
	}
	if m := w.CloudEvents.Mode; m != CEStructured && m != CEBinary {
		v.errf(p+".cloudevents.mode", "unknown mode %q (want structured or binary)", m)
	}
}

func (e *ExecSpec) validate(v *validator, p string) {
	if len(e.Command) == 0 || e.Command[0] == "" {
		v.errf(p+".command", "required: the program and its arguments as a list")
	}
	positive(v, p+".timeout", e.Timeout)
	e.validateEnv(v, p+".env")
	e.Retry.validate(v, p+".retry")
}

func (r *RetrySpec) validate(v *validator, p string) {
	if *r.Max < 0 {
		v.errf(p+".max", "must not be negative")
	}
	if *r.MaxBackoff < *r.InitialBackoff {
		v.errf(p+".maxBackoff", "must not be less than initialBackoff")
	}
}

// validate checks what the rule says that needs nothing but the file: names,
// namespaces, event types, onStart and actions. Its resources, label selector,
// paths and conditions are compiled, and checked, by package rules. The
// namespaces are the rule's own (inheritDefaults gives it defaults.namespaces
// after the checks, which judge those once, at their own path).
func (rs *RuleSpec) validate(v *validator, p string, c *Config) {
	if len(rs.Resources) == 0 {
		v.errf(p+".resources", "required: select at least one resource")
	}
	for j := range rs.Resources {
		rs.Resources[j].validate(v, fmt.Sprintf("%s.resources[%d]", p, j))
	}
	validateNamespaces(v, p+".namespaces", rs.Namespaces)
	for j, t := range rs.On {
		if !slices.Contains(EventTypes, t) {
			v.errf(fmt.Sprintf("%s.on[%d]", p, j), "unknown event type %q%s (want one of %s)", t, didYouMean(t, EventTypes), strings.Join(EventTypes, ", "))
		}
	}
	rs.validateOnStart(v, p, c.StateEnabled())
	switch rs.Fire {
	case FireAlways, FireEnter, FireExit, FireEdges:
		if rs.Fire != FireAlways {
			for j, cs := range rs.When {
				if cs.Object == "old" {
					v.errf(fmt.Sprintf("%s.when[%d].object", p, j), "object: old cannot be combined with fire: %s (transitions compare the conditions on the old and the new object)", rs.Fire)
				}
			}
		}
	default:
		v.errf(p+".fire", "unknown fire %q%s (want one of %s)", rs.Fire, didYouMean(rs.Fire, fires), strings.Join(fires, ", "))
	}
	rs.validateWaits(v, p)
	if len(rs.Actions) == 0 {
		v.errf(p+".actions", "required: name at least one action")
	}
	for j, a := range rs.Actions {
		if c.Action(a) == nil {
			v.errf(fmt.Sprintf("%s.actions[%d]", p, j), "undefined action %q (define it under actions)", a)
		}
	}
}

// fires are the fire modes, for messages.
var fires = []string{FireAlways, FireEnter, FireExit, FireEdges}

// validateOnStart checks onStart: diff needs state.
func (rs *RuleSpec) validateOnStart(v *validator, p string, state bool) {
	switch rs.OnStart {
	case OnStartDiff:
		if !state {
			v.errf(p+".onStart", "diff needs state.path: set state.path, or use all or none")
		}
	case OnStartAll, OnStartNone:
	default:
		starts := []string{"diff", "all", "none"}
		v.errf(p+".onStart", "unknown onStart %q%s (want one of %s)", rs.OnStart, didYouMean(rs.OnStart, starts), strings.Join(starts, ", "))
	}
}

// checkFormat reports a format that is not in allowed.
func checkFormat(v *validator, p, f string, allowed ...string) {
	if !slices.Contains(allowed, f) {
		v.errf(p, "unknown format %q%s (want one of %s)", f, didYouMean(f, allowed), strings.Join(allowed, ", "))
	}
}

func validateTLS(v *validator, p string, t *TLSSpec) {
	if t != nil && t.CAFile != "" {
		if _, err := os.Stat(t.CAFile); err != nil {
			v.errf(p+".caFile", "%v", err)
		}
	}
}

// positive reports a duration that is zero or negative at p: a timeout of
// 0s would fail every attempt at once (exec) or mean none at all (HTTP).
func positive(v *validator, p string, d *Duration) {
	if *d <= 0 {
		v.errf(p, "must be positive, got %s", d.Std())
	}
}

// validatePositive is positive with the bus sinks' message.
func validatePositive(v *validator, p string, d *Duration) {
	if d.Std() <= 0 {
		v.errf(p, "must be more than 0")
	}
}

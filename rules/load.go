package rules

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/event"
)

// File is a loaded and validated config file: the decoded tree and what was
// compiled from it.
type File struct {
	// Path is the file the config was read from.
	Path string
	// Source is the file's content, to tell whether the file changed since.
	Source []byte
	// Config is the decoded tree with defaults applied.
	Config *Config
	// Rules are the compiled rules, in file order.
	Rules []*Rule
	// Redactor blanks the configured paths of payload objects.
	Redactor *Redactor
}

// Action returns the named action spec.
func (f *File) Action(name string) *ActionSpec {
	for i := range f.Config.Actions {
		if f.Config.Actions[i].Name == name {
			return &f.Config.Actions[i]
		}
	}
	return nil
}

// StateEnabled reports whether restart state is configured.
func (f *File) StateEnabled() bool { return f.Config.State != nil && f.Config.State.Path != "" }

// Load reads, decodes and validates the config file at path. A non-nil error is
// either an I/O error or Problems, every problem in the file.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data)
}

// The defaults of SPEC §3.
const (
	DefaultQueueSize     = 10000
	DefaultConcurrency   = 4
	DefaultShutdownGrace = 30 * time.Second
	DefaultWebhookTO     = 10 * time.Second
	DefaultExecTO        = 30 * time.Second
	DefaultRetryMax      = 10
	DefaultInitialBO     = time.Second
	DefaultMaxBO         = 5 * time.Minute
)

// The onStart modes of SPEC §5.
const (
	OnStartDiff = "diff"
	OnStartAll  = "all"
	OnStartNone = "none"
)

// Parse decodes and validates a config file's content; name is used in messages.
func Parse(name string, data []byte) (*File, error) {
	d := &decoder{file: name, lines: map[string]int{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, Problems{{File: name, Line: yamlErrLine(err), Msg: strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	if len(doc.Content) == 0 {
		return nil, Problems{{File: name, Msg: "the file is empty"}}
	}
	cfg := &Config{}
	d.decode(&doc, reflectValue(cfg), "")
	c := &compiler{decoder: d, cfg: cfg, file: &File{Path: name, Source: data, Config: cfg}}
	c.validate()
	if len(d.problems) > 0 {
		slices.SortStableFunc(d.problems, func(a, b Problem) int { return a.Line - b.Line })
		return nil, d.problems
	}
	return c.file, nil
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

func yamlErrLine(err error) int {
	m := yamlLineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	var n int
	fmt.Sscan(m[1], &n)
	return n
}

type compiler struct {
	*decoder
	cfg  *Config
	file *File
}

func (c *compiler) errf(path, format string, args ...any) {
	c.addf(c.lineOf(path), path, format, args...)
}

func (c *compiler) validate() {
	cfg := c.cfg
	switch {
	case cfg.APIVersion == "":
		c.errf("apiVersion", "required: set apiVersion: %s", APIVersion)
	case cfg.APIVersion != APIVersion:
		c.errf("apiVersion", "unsupported apiVersion %q (want %s)", cfg.APIVersion, APIVersion)
	}
	c.validateNamespaces("defaults.namespaces", cfg.Defaults.Namespaces)
	if cfg.State != nil && cfg.State.Path == "" {
		c.errf("state.path", "required when state is given")
	}
	if cfg.ShutdownGrace == nil {
		g := Duration(DefaultShutdownGrace)
		cfg.ShutdownGrace = &g
	}
	c.validateRedact()
	c.validateActions()
	c.validateRules()
}

func (c *compiler) validateNamespaces(path string, nss []string) {
	for i, ns := range nss {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			c.errf(fmt.Sprintf("%s[%d]", path, i), "invalid namespace %q: %s", ns, errs[0])
		}
	}
}

func (c *compiler) validateRedact() {
	if c.cfg.Redact == nil {
		c.cfg.Redact = DefaultRedact()
	}
	for i, r := range c.cfg.Redact {
		p := fmt.Sprintf("redact[%d]", i)
		if r.Kind == "" {
			c.errf(p+".kind", "required")
		}
		if len(r.Paths) == 0 {
			c.errf(p+".paths", "required: list the paths to blank")
		}
		for j, rp := range r.Paths {
			if err := checkPlainPath(rp); err != nil {
				c.errf(fmt.Sprintf("%s.paths[%d]", p, j), "%v", err)
			}
		}
	}
	c.file.Redactor = NewRedactor(c.cfg.Redact)
}

var envRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func (c *compiler) validateActions() {
	if len(c.cfg.Actions) == 0 {
		c.errf("actions", "required: define at least one action")
	}
	seen := map[string]int{}
	for i := range c.cfg.Actions {
		a := &c.cfg.Actions[i]
		p := fmt.Sprintf("actions[%d]", i)
		switch {
		case a.Name == "":
			c.errf(p+".name", "required")
		case seen[a.Name] > 0:
			c.errf(p+".name", "duplicate action name %q (first defined at actions[%d])", a.Name, seen[a.Name]-1)
		default:
			seen[a.Name] = i + 1
		}
		kinds := 0
		for _, set := range []bool{a.Log != nil, a.Webhook != nil, a.Exec != nil} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			c.errf(p, "set exactly one of log, webhook and exec (found %d)", kinds)
		}
		if a.QueueSize < 0 {
			c.errf(p+".queueSize", "must not be negative")
		} else if a.QueueSize == 0 {
			a.QueueSize = DefaultQueueSize
		}
		if a.Concurrency < 0 {
			c.errf(p+".concurrency", "must not be negative")
		} else if a.Concurrency == 0 {
			a.Concurrency = DefaultConcurrency
		}
		if a.Webhook != nil {
			c.validateWebhook(p+".webhook", a.Webhook)
		}
		if a.Exec != nil {
			c.validateExec(p+".exec", a.Exec)
		}
	}
}

func (c *compiler) validateWebhook(p string, w *WebhookSpec) {
	if w.URL == "" {
		c.errf(p+".url", "required")
	} else if u, err := url.Parse(w.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.errf(p+".url", "want an absolute http or https URL, got %q", w.URL)
	}
	if w.Method == "" {
		w.Method = "POST"
	} else if strings.ToUpper(w.Method) != w.Method || strings.ContainsAny(w.Method, " \t/") {
		c.errf(p+".method", "want an upper-case HTTP method such as POST, got %q", w.Method)
	}
	for k, v := range w.Headers {
		var missing []string
		w.Headers[k] = envRE.ReplaceAllStringFunc(v, func(m string) string {
			name := envRE.FindStringSubmatch(m)[1]
			val, ok := os.LookupEnv(name)
			if !ok {
				missing = append(missing, name)
			}
			return val
		})
		for _, name := range missing {
			c.errf(p+".headers."+k, "environment variable %s is not set", name)
		}
	}
	if w.Body != "" {
		if err := checkTemplate(w.Body); err != nil {
			c.errf(p+".body", "%v", err)
		}
	}
	w.Timeout = orDuration(w.Timeout, DefaultWebhookTO)
	w.Retry = c.retryDefaults(p+".retry", w.Retry)
	if w.TLS != nil && w.TLS.CAFile != "" {
		if _, err := os.Stat(w.TLS.CAFile); err != nil {
			c.errf(p+".tls.caFile", "%v", err)
		}
	}
}

// checkTemplate parses a body template and runs it once on a sample payload, so
// that a reference to a field the payload does not have is a config error at load
// rather than a delivery error on every event. Errors that depend on an event's
// data (a missing map key, a function failing) can only show at delivery.
func checkTemplate(body string) error {
	t, err := template.New("body").Option("missingkey=error").Funcs(TemplateFuncs()).Parse(body)
	if err != nil {
		return fmt.Errorf("bad template: %w", err)
	}
	sample := &event.Payload{ID: "uid:1:add", Type: event.Add, Object: []byte(`{}`)}
	err = t.Execute(io.Discard, sample)
	var execErr template.ExecError
	if errors.As(err, &execErr) && strings.Contains(err.Error(), "can't evaluate field") {
		return fmt.Errorf("bad template: %w (the event has: %s)", err, payloadFields)
	}
	return nil
}

// payloadFields names what a body template can read from the event.
const payloadFields = ".ID .Time .Type .Replay .Rule .Resource (.Group .Version .Resource .Kind .Namespaced) .Namespace .Name .UID .ResourceVersion .Fields .Changed .Object .OldObject"

func (c *compiler) validateExec(p string, e *ExecSpec) {
	if len(e.Command) == 0 || e.Command[0] == "" {
		c.errf(p+".command", "required: the program and its arguments as a list")
	}
	e.Timeout = orDuration(e.Timeout, DefaultExecTO)
	e.Retry = c.retryDefaults(p+".retry", e.Retry)
}

func (c *compiler) retryDefaults(p string, r *RetrySpec) *RetrySpec {
	if r == nil {
		r = &RetrySpec{}
	}
	if r.Max == nil {
		m := DefaultRetryMax
		r.Max = &m
	} else if *r.Max < 0 {
		c.errf(p+".max", "must not be negative")
	}
	r.InitialBackoff = orDuration(r.InitialBackoff, DefaultInitialBO)
	r.MaxBackoff = orDuration(r.MaxBackoff, DefaultMaxBO)
	if *r.MaxBackoff < *r.InitialBackoff {
		c.errf(p+".maxBackoff", "must not be less than initialBackoff")
	}
	return r
}

func orDuration(d *Duration, def time.Duration) *Duration {
	if d == nil {
		v := Duration(def)
		return &v
	}
	return d
}

func (c *compiler) validateRules() {
	if len(c.cfg.Rules) == 0 {
		c.errf("rules", "required: define at least one rule")
	}
	seen := map[string]int{}
	for i := range c.cfg.Rules {
		rs := &c.cfg.Rules[i]
		p := fmt.Sprintf("rules[%d]", i)
		switch {
		case rs.Name == "":
			c.errf(p+".name", "required")
		case seen[rs.Name] > 0:
			c.errf(p+".name", "duplicate rule name %q (first defined at rules[%d])", rs.Name, seen[rs.Name]-1)
		default:
			seen[rs.Name] = i + 1
		}
		if r := c.compileRule(p, rs); r != nil {
			c.file.Rules = append(c.file.Rules, r)
		}
	}
}

func (c *compiler) compileRule(p string, rs *RuleSpec) *Rule {
	before := len(c.problems)
	r := &Rule{Name: rs.Name, Actions: rs.Actions, LabelSelector: labels.Everything()}

	if len(rs.Resources) == 0 {
		c.errf(p+".resources", "required: select at least one resource")
	}
	for j, s := range rs.Resources {
		sel := discovery.Selector{Group: s.Group.Val, GroupSet: s.Group.Set, Version: s.Version, Resource: s.Resource, Kind: s.Kind}
		if err := sel.Validate(); err != nil {
			c.errf(fmt.Sprintf("%s.resources[%d]", p, j), "%v", err)
		}
		r.Selectors = append(r.Selectors, sel)
	}

	nss := rs.Namespaces
	if nss == nil {
		nss = c.cfg.Defaults.Namespaces
	} else {
		c.validateNamespaces(p+".namespaces", nss)
	}
	if len(nss) > 0 {
		r.Namespaces = slices.Compact(slices.Sorted(slices.Values(nss)))
	}

	if rs.LabelSelector != "" {
		sel, err := labels.Parse(rs.LabelSelector)
		if err != nil {
			c.errf(p+".labelSelector", "%v", err)
		} else {
			r.LabelSelector = sel
		}
	}

	if len(rs.On) == 0 {
		r.on = onAdd | onUpdate | onDelete
	}
	for j, t := range rs.On {
		bit, ok := onBits[event.Type(t)]
		if !ok {
			c.errf(fmt.Sprintf("%s.on[%d]", p, j), "unknown event type %q (want one of add, update, delete)", t)
		}
		r.on |= bit
	}

	for j, cs := range rs.When {
		cond, err := compileCondition(cs)
		if err != nil {
			field := ""
			if ce, ok := err.(*condError); ok {
				field, err = "."+ce.field, ce.err
			}
			c.errf(fmt.Sprintf("%s.when[%d]%s", p, j, field), "%v", err)
			continue
		}
		r.conds = append(r.conds, cond)
	}

	for j, cp := range rs.Changed {
		if err := checkPath(cp); err != nil {
			c.errf(fmt.Sprintf("%s.changed[%d]", p, j), "%v", err)
		}
	}
	r.changed = rs.Changed

	for _, name := range sortedKeys(rs.Fields) {
		fp := rs.Fields[name]
		if err := checkPath(fp); err != nil {
			c.errf(p+".fields."+name, "%v", err)
		}
		r.fields = append(r.fields, field{name: name, path: fp})
	}

	switch rs.OnStart {
	case "":
		if c.file.StateEnabled() {
			r.OnStart = OnStartDiff
		} else {
			r.OnStart = OnStartNone
		}
	case OnStartDiff:
		if !c.file.StateEnabled() {
			c.errf(p+".onStart", "diff needs state.path: set state.path, or use all or none")
		}
		r.OnStart = rs.OnStart
	case OnStartAll, OnStartNone:
		r.OnStart = rs.OnStart
	default:
		c.errf(p+".onStart", "unknown onStart %q (want one of diff, all, none)", rs.OnStart)
	}

	if len(rs.Actions) == 0 {
		c.errf(p+".actions", "required: name at least one action")
	}
	for j, a := range rs.Actions {
		if c.file.Action(a) == nil {
			c.errf(fmt.Sprintf("%s.actions[%d]", p, j), "undefined action %q (define it under actions)", a)
		}
	}
	if len(c.problems) > before {
		return nil
	}
	return r
}

// CompileRule compiles one rule outside a config file, for commands that build
// rules from flags (tail). Actions are not checked; onStart diff is not allowed.
func CompileRule(rs RuleSpec) (*Rule, error) {
	d := &decoder{file: "rule", lines: map[string]int{}}
	cfg := &Config{}
	for _, a := range rs.Actions {
		cfg.Actions = append(cfg.Actions, ActionSpec{Name: a, Log: &LogSpec{}})
	}
	c := &compiler{decoder: d, cfg: cfg, file: &File{Config: cfg}}
	r := c.compileRule("", &rs)
	if len(d.problems) > 0 {
		return nil, d.problems
	}
	return r, nil
}

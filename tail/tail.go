package tail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/health"
	"github.com/dynwatch/dynwatch/payload"
	"github.com/dynwatch/dynwatch/rules"
)

// RuleName is the rule name tail's payloads carry.
const RuleName = "tail"

// Column is one --columns entry: a name (the header, upper-cased, and the key in
// a JSON payload's fields) and a gjson path.
type Column struct {
	Name, Path string
}

// ParseColumns reads --columns NAME=PATH,… or, as kubectl's custom-columns,
// NAME:PATH,…; PATH is a gjson path or kubectl's spelling of one (.spec.size,
// {.spec.size}: see kubePath).
func ParseColumns(s string) ([]Column, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var cols []Column
	for _, part := range strings.Split(s, ",") {
		name, path, ok := SplitColumn(part)
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("--columns: want NAME=PATH[,NAME=PATH…] (or kubectl's NAME:.spec.path), got %q", part)
		}
		gpath, err := kubePath(path)
		if err != nil {
			return nil, fmt.Errorf("--columns %s: %v", strings.TrimSpace(part), err)
		}
		cols = append(cols, Column{Name: name, Path: gpath})
	}
	return cols, nil
}

// SplitColumn cuts one --columns entry at its first = or : (NAME=PATH,
// NAME:PATH), whichever comes first.
func SplitColumn(part string) (name, path string, ok bool) {
	part = strings.TrimSpace(part)
	i := strings.IndexAny(part, "=:")
	if i < 0 {
		return part, "", false
	}
	return strings.TrimSpace(part[:i]), strings.TrimSpace(part[i+1:]), true
}

// Options configure a tail.
type Options struct {
	Resources     []discovery.Resource
	Namespace     string // "" = all namespaces
	LabelSelector string
	Where         []config.ConditionSpec
	Columns       []Column
	Output        string         // table (default), wide, json, yaml or name
	NoHeaders     bool           // a table without its header line
	Location      *time.Location // of the TIME column; default: local time
	// Initial: print the objects that exist at start first (as add events),
	// as kubectl get -w lists them; a table sizes its columns to them. False
	// is --watch-only: changes only.
	Initial bool
	// Name is the one object's name of tail TYPE NAME (its filter is in
	// Where): with Initial, Run fails with a NotFoundError when the initial
	// list has no object of that name, as kubectl get -w NAME does.
	Name   string
	Out    io.Writer
	Logger *slog.Logger
	Now    func() time.Time
	// Cluster names the cluster client reaches, with several (tail
	// --cluster): in each payload. ClusterColumn gives the table a CLUSTER
	// column. Printer, when set, is shared by the tails of several
	// clusters (its header written once, by the caller, who, with Initial,
	// holds it once per tail: each Run releases it once, after its initial
	// list). Default: "", no column, a printer of its own.
	Cluster       string
	ClusterColumn bool
	Printer       *Printer
	// Redactor blanks what a config file's redact list names (tail
	// --config), as run, audit and test do. Default: the built-in list.
	Redactor *payload.Redactor
	// Unhealthy keeps only the objects whose health is not Current (tail
	// --health).
	Unhealthy bool
	// Deriver computes the objects' health, for health.* in Where and
	// Columns (tail --config: the config's). Default: kstatus' rules alone.
	Deriver event.Deriver
}

// Rule compiles the options' filters into the rule tail evaluates.
func (o *Options) Rule() (*rules.Rule, error) {
	spec := config.RuleSpec{Name: RuleName, LabelSelector: o.LabelSelector, When: o.Where, Actions: []string{RuleName}, OnStart: config.OnStartNone}
	if o.Initial {
		spec.OnStart = config.OnStartAll
	}
	if o.Unhealthy {
		spec.When = append(slices.Clip(spec.When), config.ConditionSpec{Path: event.HealthRoot + ".status", Op: "ne",
			Value: config.Value{Node: &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: health.Current}}})
	}
	// tail's informers watch exactly o.Resources; the rule only filters.
	spec.Resources = []config.Selector{{Resource: "*"}}
	fields := map[string]string{}
	for _, c := range o.Columns {
		fields[c.Name] = c.Path
	}
	if len(fields) > 0 {
		spec.Fields = fields
	}
	return rules.CompileRule(spec)
}

// deriver is o's Deriver, or kstatus' rules alone.
func (o *Options) deriver() event.Deriver {
	if o.Deriver != nil {
		return o.Deriver
	}
	c, _ := health.New(nil)
	return c
}

// Run follows the resources until ctx is done.
func Run(ctx context.Context, client *dyninformer.Client, o Options) error {
	rule, err := o.Rule()
	if err != nil {
		return err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	p := o.Printer
	if p == nil {
		p = NewPrinter(o)
		if o.Initial {
			p.Hold()
		}
		if err := p.Header(); err != nil {
			return err
		}
	}
	release := func() error { return nil }
	if o.Initial {
		release = sync.OnceValue(p.Release)
		defer func() { _ = release() }()
	}
	red := o.Redactor
	if red == nil {
		red = payload.NewRedactor(config.DefaultRedact())
	}
	deriver := o.deriver()
	eval := &rules.Evaluator{Redactor: red, Deriver: deriver}
	only := []*rules.Rule{rule}
	name := ""
	if o.Initial {
		name = o.Name
	}
	pr := newProbe(o.Where, o.Columns, name)
	mgr := dyninformer.NewManager(client, func(_ dyninformer.Key, ev *event.Event) {
		ev.Deriver = deriver // before the probe, which reads health.* too
		pr.observe(ev)
		ev.Cluster = o.Cluster
		for _, m := range eval.Evaluate(only, ev) {
			if err := p.Print(m.Payload); err != nil {
				o.Logger.Error("write", "err", err)
			}
		}
	}, dyninformer.Options{Logger: o.Logger})
	var watches []dyninformer.Watch
	for _, r := range o.Resources {
		watches = append(watches, dyninformer.Watch{Resource: r.Ref(), Namespace: o.Namespace})
	}
	_, _ = mgr.Set(watches, dyninformer.ListsKnown)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan error, 1)
	go func() { done <- mgr.Run(ctx) }()
	if mgr.WaitForSync(ctx) {
		missing := name != "" && !pr.listedName()
		if missing && o.Printer == nil {
			p.discard() // as kubectl get -w NAME: the error alone, no header
		}
		if err := release(); err != nil {
			o.Logger.Error("write", "err", err)
		}
		o.logFollowing()
		pr.report(o.Logger)
		if missing {
			r := o.Resources[0]
			cancel(&NotFoundError{Resource: r.Name(), Namespace: o.Namespace, Name: name, ClusterScoped: !r.Namespaced})
		}
	}
	err = <-done
	if cause := context.Cause(ctx); errors.As(cause, new(*NotFoundError)) {
		return cause
	}
	return err
}

// NotFoundError is tail TYPE NAME of an object the initial list did not have.
type NotFoundError struct {
	Resource, Namespace, Name string
	ClusterScoped             bool
}

func (e *NotFoundError) Error() string {
	where := " in any namespace"
	switch {
	case e.ClusterScoped:
		where = ""
	case e.Namespace != "":
		where = fmt.Sprintf(" in namespace %q", e.Namespace)
	}
	return fmt.Sprintf("%s %q not found%s (--watch-only waits for it to appear)", e.Resource, e.Name, where)
}

// logFollowing says, at info level, what tail follows once it has listed.
func (o *Options) logFollowing() {
	var names []string
	for _, r := range o.Resources {
		names = append(names, r.Name())
	}
	if o.Cluster != "" {
		o.Logger.Info("following", "resources", strings.Join(names, ","), "namespace", nsOrAll(o.Namespace), "cluster", o.Cluster)
	} else {
		o.Logger.Info("following", "resources", strings.Join(names, ","), "namespace", nsOrAll(o.Namespace))
	}
}

func nsOrAll(ns string) string {
	if ns == "" {
		return "(all)"
	}
	return ns
}

// Package tail follows several resource types at once from a shell: one line per
// event (a table) or one payload per line (JSON), filtered by typed --where
// expressions.
//
// It uses dyninformer and rules directly and must not import the daemon's
// packages (watcher, daemon, state).
package tail

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/util/duration"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/payload"
	"github.com/dynwatch/dynwatch/rules"
)

// RuleName is the rule name tail's payloads carry.
const RuleName = "tail"

// WhereSyntax explains --where, for usage errors.
const WhereSyntax = `--where 'PATH OP VALUE' with OP one of == != > >= < <= =~ (an RE2 regexp matching the whole value),
or 'PATH' (the path exists) or '!PATH' (it does not). VALUE is read as JSON when it parses
(5, true, "5", null), else as a string. PATH is a gjson path, e.g. spec.replicas or
metadata.labels.app\.kubernetes\.io/name. The config's spelled operators work too (spec.replicas gt 3,
metadata.name matches web-.*, spec.paused notExists). Examples: --where 'spec.replicas > 3'
--where 'status.phase == Running' --where '!spec.paused'. --where-cel takes a CEL expression over
object and oldObject instead: --where-cel 'object.status.readyReplicas < object.spec.replicas'`

// ParseWhere reads one --where expression into a condition.
func ParseWhere(expr string) (config.ConditionSpec, error) {
	expr = strings.TrimSpace(expr)
	if cs, ok, err := parseSpelled(expr); ok || err != nil {
		return cs, err
	}
	o, at := findOperator(expr)
	if o == nil {
		if err := singleEquals(expr); err != nil {
			return config.ConditionSpec{}, err
		}
		if hasSpace(expr) || expr == "" || expr == "!" {
			return config.ConditionSpec{}, fmt.Errorf("cannot read %q: no operator (want PATH OP VALUE with OP one of %s)", expr, operatorList())
		}
		if p, ok := strings.CutPrefix(expr, "!"); ok {
			return config.ConditionSpec{Path: p, Op: "notExists"}, nil
		}
		return config.ConditionSpec{Path: expr, Op: "exists"}, nil
	}
	path := strings.TrimSpace(expr[:at])
	raw := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(expr[at:]), o.Symbol))
	switch {
	case path == "" || raw == "":
		return config.ConditionSpec{}, fmt.Errorf("cannot read %q: want PATH %s VALUE", expr, o.Symbol)
	case hasSpace(path):
		// "spec.size => 3": what follows the path is not an operator.
		head, _, _ := cutSpace(path)
		bad, _, _ := strings.Cut(strings.TrimSpace(expr[len(head):]), " ")
		return config.ConditionSpec{}, fmt.Errorf("cannot read %q: after the path %q comes %q, which is not an operator (want one of %s)",
			expr, head, bad, operatorList())
	}
	return config.ConditionSpec{Path: path, Op: o.Name, Value: config.Value{Node: valueNode(raw, o.Name == "matches")}}, nil
}

// parseSpelled reads the config's spelled operators: PATH gt 3, PATH matches
// RE, PATH exists. ok is false when expr is not of that form.
func parseSpelled(expr string) (cs config.ConditionSpec, ok bool, err error) {
	path, rest, found := cutSpace(expr)
	if !found {
		return cs, false, nil
	}
	name, raw, _ := strings.Cut(strings.TrimSpace(rest), " ")
	raw = strings.TrimSpace(raw)
	var op *rules.Operator
	for _, o := range rules.Table() {
		if o.Name == name {
			op = &o
		}
	}
	switch {
	case op == nil:
		return cs, false, nil
	case op.Arity == rules.NoValue && raw != "":
		return cs, true, fmt.Errorf("cannot read %q: %s takes no value", expr, name)
	case op.Arity == rules.NoValue:
		return config.ConditionSpec{Path: path, Op: name}, true, nil
	case raw == "":
		return cs, true, fmt.Errorf("cannot read %q: want PATH %s VALUE", expr, name)
	case op.Arity == rules.ListValue:
		var n yaml.Node
		if yaml.Unmarshal([]byte(raw), &n) != nil || len(n.Content) != 1 {
			return cs, true, fmt.Errorf("cannot read %q: %s needs a list such as [a, b]", expr, name)
		}
		return config.ConditionSpec{Path: path, Op: name, Value: config.Value{Node: n.Content[0]}}, true, nil
	}
	return config.ConditionSpec{Path: path, Op: name, Value: config.Value{Node: valueNode(raw, name == "matches")}}, true, nil
}

// operatorList names every operator --where takes: symbols and spelled names.
func operatorList() string {
	var out []string
	for _, o := range rules.Symbols() {
		out = append(out, o.Symbol)
	}
	return strings.Join(out, " ") + ", or spelled: " + strings.Join(rules.Operators(), ", ")
}

// hasSpace reports white space outside brackets and quotes.
func hasSpace(s string) bool {
	_, _, found := cutSpace(s)
	return found
}

// cutSpace cuts s at its first white space outside brackets and quotes.
func cutSpace(s string) (before, after string, found bool) {
	i := topLevel(s, func(i int) bool { return s[i] == ' ' || s[i] == '\t' })
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

// findOperator finds the first operator symbol that stands outside brackets,
// parentheses and quotes, so that a gjson query in the path
// (spec.endpoints.#(interval=="7s")) is read as part of the path.
func findOperator(expr string) (*rules.Operator, int) {
	symbols := rules.Symbols()
	var found *rules.Operator
	at := topLevel(expr, func(i int) bool {
		for j := range symbols {
			if i > 0 && strings.HasPrefix(expr[i:], symbols[j].Symbol) {
				found = &symbols[j]
				return true
			}
		}
		return false
	})
	return found, at
}

// topLevel returns the first index of s, outside brackets, parentheses and
// quotes (and not escaped), at which match holds; -1 if none.
func topLevel(s string, match func(i int) bool) int {
	depth, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case quoted:
			quoted = c != '"'
		case c == '"' && depth > 0:
			quoted = true
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case depth == 0 && match(i):
			return i
		}
	}
	return -1
}

// valueNode reads VALUE as JSON when it parses, else as a string; a regexp is
// always a string.
func valueNode(raw string, regexp bool) *yaml.Node {
	var v any
	if !regexp && json.Unmarshal([]byte(raw), &v) == nil {
		if _, isMap := v.(map[string]any); !isMap {
			if _, isList := v.([]any); !isList {
				var n yaml.Node
				if yaml.Unmarshal([]byte(raw), &n) == nil && len(n.Content) == 1 {
					return n.Content[0]
				}
			}
		}
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: raw}
}

// Column is one --columns entry: a name (the header, upper-cased, and the key in
// a JSON payload's fields) and a gjson path.
type Column struct {
	Name, Path string
}

// ParseColumns reads --columns NAME=PATH,NAME=PATH.
func ParseColumns(s string) ([]Column, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var cols []Column
	for _, part := range strings.Split(s, ",") {
		name, path, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("--columns: want NAME=PATH[,NAME=PATH…], got %q", part)
		}
		cols = append(cols, Column{Name: name, Path: path})
	}
	return cols, nil
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
	Initial       bool           // also print the objects that exist at start
	Out           io.Writer
	Logger        *slog.Logger
	Now           func() time.Time
}

// Rule compiles the options' filters into the rule tail evaluates.
func (o *Options) Rule() (*rules.Rule, error) {
	spec := config.RuleSpec{Name: RuleName, LabelSelector: o.LabelSelector, When: o.Where, Actions: []string{RuleName}, OnStart: config.OnStartNone}
	if o.Initial {
		spec.OnStart = config.OnStartAll
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
	p := NewPrinter(o)
	eval := &rules.Evaluator{Redactor: payload.NewRedactor(config.DefaultRedact())}
	only := []*rules.Rule{rule}
	pr := newProbe(o.Where)
	mgr := dyninformer.NewManager(client, func(_ dyninformer.Key, ev *event.Event) {
		pr.observe(ev)
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
	if err := p.Header(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Run(ctx) }()
	if mgr.WaitForSync(ctx) {
		var names []string
		for _, r := range o.Resources {
			names = append(names, r.Name())
		}
		o.Logger.Info("following", "resources", strings.Join(names, ","), "namespace", nsOrAll(o.Namespace))
		pr.report(o.Logger)
	}
	return <-done
}

func nsOrAll(ns string) string {
	if ns == "" {
		return "(all)"
	}
	return ns
}

// Printer writes payloads as table rows (table, wide), JSON lines (json), YAML
// documents (yaml) or kind/name lines (name). It is safe for the concurrent
// calls of several informers.
type Printer struct {
	mu      sync.Mutex
	o       Options
	widths  []int
	printed bool
}

// The table's fixed columns, as kubectl get -w would show them, and what wide adds.
var (
	tableColumns = []string{"TIME", "EVENT", "RESOURCE", "NAMESPACE", "NAME", "AGE", "CHANGED"}
	wideColumns  = []string{"UID", "RESOURCE-VERSION"}
)

// changedWidth is how much of the changed paths a table row shows (wide: all).
const changedWidth = 40

// NewPrinter returns a printer for o.
func NewPrinter(o Options) *Printer {
	if o.Now == nil {
		o.Now = time.Now
	}
	p := &Printer{o: o}
	// Columns start as wide as their header, or as a typical value, and grow
	// when a longer value comes by: a stream cannot be measured in advance.
	p.widths = []int{len("15:04:05"), len("update"), len("RESOURCE"), 16, 28, 5, 24}
	for _, r := range o.Resources {
		p.widths[2] = max(p.widths[2], len(r.Name()))
	}
	if o.Output == "wide" {
		p.widths = append(p.widths, 36, 16)
	}
	for _, c := range o.Columns {
		p.widths = append(p.widths, max(len(c.Name), 8))
	}
	return p
}

func (p *Printer) tabular() bool {
	return p.o.Output == "table" || p.o.Output == "wide" || p.o.Output == ""
}

// Header writes the table header; other outputs have none, nor has a table
// with NoHeaders.
func (p *Printer) Header() error {
	if !p.tabular() || p.o.NoHeaders {
		return nil
	}
	cells := slices.Clone(tableColumns)
	if p.o.Output == "wide" {
		cells = append(cells, wideColumns...)
	}
	for _, c := range p.o.Columns {
		cells = append(cells, strings.ToUpper(c.Name))
	}
	return p.row(cells)
}

// Print writes one payload.
func (p *Printer) Print(pl *event.Payload) error {
	switch p.o.Output {
	case "json":
		b, err := json.Marshal(pl)
		if err != nil {
			return err
		}
		return p.write(append(b, '\n'))
	case "yaml":
		b, err := json.Marshal(pl)
		if err == nil {
			b, err = sigsyaml.JSONToYAML(b)
		}
		if err != nil {
			return err
		}
		return p.write(append([]byte("---\n"), b...))
	case "name":
		kind := strings.ToLower(pl.Resource.Kind)
		if pl.Resource.Group != "" {
			kind += "." + pl.Resource.Group
		}
		return p.write([]byte(printable(kind+"/"+pl.Name) + "\n"))
	}
	return p.row(p.cells(pl))
}

func (p *Printer) write(b []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.o.Out.Write(b)
	return err
}

// cells are a payload's table row.
func (p *Printer) cells(pl *event.Payload) []string {
	ns := pl.Namespace
	if ns == "" {
		ns = "-"
	}
	age := "<unknown>"
	if ts, err := time.Parse(time.RFC3339, gjson.GetBytes(pl.Object, "metadata.creationTimestamp").Str); err == nil {
		age = duration.HumanDuration(p.o.Now().Sub(ts))
	}
	at := p.o.Now()
	if t, err := time.Parse(event.TimeFormat, pl.Time); err == nil {
		at = t
	}
	changed := strings.Join(pl.Changed, ",")
	if changed == "" {
		changed = "-"
	} else if len(changed) > changedWidth && p.o.Output != "wide" {
		changed = changed[:changedWidth-1] + "…"
	}
	loc := p.o.Location
	if loc == nil {
		loc = time.Local
	}
	cells := []string{at.In(loc).Format("15:04:05"), string(pl.Type), pl.Resource.Name(), ns, pl.Name, age, changed}
	if p.o.Output == "wide" {
		cells = append(cells, pl.UID, pl.ResourceVersion)
	}
	for _, c := range p.o.Columns {
		cells = append(cells, cell(pl.Fields[c.Name]))
	}
	return cells
}

func cell(raw json.RawMessage) string {
	r := gjson.ParseBytes(raw)
	switch {
	case len(raw) == 0 || r.Type == gjson.Null:
		return "<none>"
	case r.Type == gjson.String:
		return r.Str
	}
	return r.Raw
}

func (p *Printer) row(cells []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for i, c := range cells {
		c = printable(c)
		if i == len(cells)-1 {
			b.WriteString(c)
			break
		}
		n := utf8.RuneCountInString(c)
		p.widths[i] = max(p.widths[i], n)
		b.WriteString(c)
		b.WriteString(strings.Repeat(" ", p.widths[i]-n+3))
	}
	b.WriteByte('\n')
	_, err := io.WriteString(p.o.Out, b.String())
	return err
}

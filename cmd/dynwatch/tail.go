package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/tail"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ", ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
func (s *stringList) Type() string       { return "stringArray" }

// tailFlags are tail's own flags.
type tailFlags struct {
	ns, selector, columns, output  string
	all, initial, noHeaders, watch bool
	watchOnly, unhealthy           bool
	ignoreUnknown                  bool
	fieldSelector, name            string
	where, whereCEL                stringList
	clusters                       clusterFlags
}

func (f *tailFlags) register(fs *flag.FlagSet) {
	fs.StringVarP(&f.ns, "namespace", "n", "", "namespace (default: the kubeconfig context's namespace)")
	fs.BoolVarP(&f.all, "all-namespaces", "A", false, "all namespaces")
	fs.StringVarP(&f.selector, "selector", "l", "", "label selector, e.g. app=web,tier!=cache")
	fs.Var(&f.where, "where", "filter 'PATH OP VALUE', '!PATH' or 'PATH'; repeatable, all must hold")
	fs.Var(&f.whereCEL, "where-cel", "filter by a CEL expression over object and oldObject, e.g. 'object.status.readyReplicas < object.spec.replicas'; repeatable")
	fs.StringVar(&f.columns, "columns", "", "extra table columns NAME=PATH,… or NAME:PATH,… (gjson paths, or kubectl's .spec.size and {.spec.size}); in JSON, payload fields")
	fs.StringVarP(&f.output, "output", "o", "table", "output: table, wide, json, yaml or name")
	fs.BoolVar(&f.unhealthy, "health", false, "show only objects whose health is not Current (InProgress, Failed, Terminating, Unknown; as kstatus computes it); --columns health=health.status shows it")
	fs.BoolVar(&f.watchOnly, "watch-only", false, "print changes only, not the objects that exist at start (as kubectl get --watch-only)")
	fs.BoolVar(&f.initial, "initial", false, "what tail does by default now: list the objects that exist at start first")
	_ = fs.MarkHidden("initial")
	fs.BoolVar(&f.noHeaders, "no-headers", false, "table and wide: no header line")
	fs.BoolVarP(&f.watch, "watch", "w", true, "accepted as with kubectl get -w: tail always watches")
	fs.StringVar(&f.fieldSelector, "field-selector", "", "as kubectl's: FIELD=VALUE, FIELD==VALUE or FIELD!=VALUE, comma-separated (any field path; checked by tail, not the API server)")
	fs.BoolVar(&f.ignoreUnknown, "ignore-unknown", false, "warn about resource names discovery does not know and follow the others (default: a usage error)")
	f.clusters.register(fs)
}

func cmdTail(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "tail", "RESOURCE[,RESOURCE…] | TYPE NAME | TYPE/NAME [-n NS|-A] [--field-selector F=V] [-l SELECTOR] [--where EXPR]… [--where-cel EXPR]… [--columns NAME=PATH,…] [--health] [-o table|wide|json|yaml|name] [--no-headers] [--watch-only]",
		"Lists the objects that exist (each once, as an add), then follows several resource types at once,\n"+
			"as kubectl get -w does, printing one line per event (table) or the event payload (json, one object\n"+
			"a line, rule \"tail\"); --watch-only prints changes only. RESOURCE is resolved as kubectl resolves it:\n"+
			"plural, singular, short name or kind, optionally with .group or .version.group (widgets.example.com);\n"+
			"a name two groups serve is the one kubectl picks (events: the core group's; events.events.k8s.io\n"+
			"for the other). TYPE NAME of an object that does not exist fails (exit 1), as kubectl get -w NAME\n"+
			"does; with --watch-only it waits for it. --health shows only objects whose health is not Current;\n"+
			"health.status and health.message are paths of every object in --where and --columns. Ctrl-C stops it.\n\n"+tail.WhereSyntax)
	var kf kubeFlags
	var lf logFlags
	var tf tailFlags
	kf.register(fs)
	lf.register(fs, "warn", "info")
	tf.register(fs)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	pos := fs.Args()
	usageErr := func(format string, a ...any) int {
		return usageError(fs, format, a...)
	}
	resources, err := tf.objectArgs(pos)
	if err != nil {
		return usageErr("%v", err)
	}
	opts, err := tf.options(e)
	if err != nil {
		return usageErr("%v", err)
	}
	if opts.Logger, err = lf.logger(e.stderr); err != nil {
		return usageErr("%v", err)
	}
	kf.log = opts.Logger
	file, err := tf.clusters.load(e)
	if err != nil {
		return usageErr("%v", err)
	}
	if file != nil {
		opts.Redactor = file.Redactor // what run, audit and test redact
		opts.Deriver = file.Health    // the config's health list
	}
	if tf.clusters.name != "" {
		return tailClusters(ctx, e, &kf, &tf, file, resources, opts, usageErr)
	}
	c, err := kf.connect()
	if err != nil {
		fmt.Fprintln(e.stderr, "dynwatch tail:", err)
		return exitFailure
	}
	if !tf.all && opts.Namespace == "" {
		opts.Namespace = kf.defaultNamespace()
	}
	cat, err := c.catalog(e.stderr)
	if err != nil {
		fmt.Fprintln(e.stderr, "dynwatch tail:", err)
		return exitFailure
	}
	if err := findResources(e, cat, resources, &opts, tf.ns != "", tf.ignoreUnknown); err != nil {
		return usageErr("%v", err)
	}
	if !tf.all && tf.ns == "" {
		noteDefaultNamespace(e, opts)
	}
	ctx, _, stop := signalContext(ctx, e)
	defer stop()
	if err := tail.Run(ctx, c.raw, opts); err != nil {
		fmt.Fprintln(e.stderr, "dynwatch tail:", err)
		return exitFailure
	}
	return exitOK
}

// options checks tail's flags and compiles its filters, before anything connects.
func (f *tailFlags) options(e *env) (tail.Options, error) {
	opts := tail.Options{Output: f.output, Initial: !f.watchOnly, LabelSelector: f.selector, Out: e.stdout, NoHeaders: f.noHeaders, Name: f.name, Unhealthy: f.unhealthy}
	if !slices.Contains([]string{"table", "wide", "json", "yaml", "name"}, f.output) {
		return opts, fmt.Errorf("-o: want table, wide, json, yaml or name, got %q", f.output)
	}
	if f.initial && f.watchOnly {
		return opts, errors.New("--initial and --watch-only exclude each other (tail lists what exists by default; --watch-only prints changes only)")
	}
	if f.all && f.ns != "" {
		return opts, errors.New("-n and -A exclude each other")
	}
	if !f.all {
		opts.Namespace = f.ns
	}
	for _, w := range f.where {
		cond, err := tail.ParseWhere(w)
		if err != nil {
			return opts, fmt.Errorf("--where: %v", err)
		}
		opts.Where = append(opts.Where, cond)
	}
	for _, expr := range f.whereCEL {
		opts.Where = append(opts.Where, config.ConditionSpec{CEL: expr})
	}
	extra, err := f.selectorConditions()
	if err != nil {
		return opts, err
	}
	opts.Where = append(opts.Where, extra...)
	cols, err := tail.ParseColumns(f.columns)
	if err != nil {
		return opts, err
	}
	opts.Columns = cols
	if _, err := opts.Rule(); err != nil {
		var ps config.Problems
		if errors.As(err, &ps) {
			var msgs []string
			for _, p := range ps {
				msgs = append(msgs, f.flagTerms(p)+": "+p.Msg)
			}
			err = errors.New(strings.Join(msgs, "; "))
		}
		return opts, err
	}
	return opts, nil
}

// findResources resolves the comma-separated resource names into opts. A name
// discovery does not know is a usage error, as with kubectl get, unless
// ignoreUnknown: then it is a warning and the others are followed.
func findResources(e *env, cat *discovery.Catalog, names string, opts *tail.Options, explicitNS, ignoreUnknown bool) error {
	var bad []string
	for _, name := range strings.Split(names, ",") {
		r, err := cat.Find(name)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		opts.Resources = append(opts.Resources, r)
	}
	if len(opts.Resources) == 0 || (len(bad) > 0 && !ignoreUnknown) {
		if len(opts.Resources) > 0 {
			bad = append(bad, "(--ignore-unknown follows the others)")
		}
		return errors.New(strings.Join(bad, "\n"))
	}
	for _, b := range bad {
		fmt.Fprintf(e.stderr, "dynwatch tail: warning: %s; following the others\n", b)
	}
	if explicitNS {
		for _, r := range opts.Resources {
			if !r.Namespaced {
				fmt.Fprintf(e.stderr, "dynwatch tail: note: %s is cluster-scoped; -n does not apply to it\n", r.Name())
			}
		}
	}
	return nil
}

// flagTerms names the flag a problem of the rule tail compiles comes from:
// --where or --where-cel with the expression, --columns with the column, -l.
func (f *tailFlags) flagTerms(p config.Problem) string {
	path := strings.TrimPrefix(p.Path, ".")
	exprs := append(slices.Clone(f.where), f.whereCEL...)
	switch {
	case strings.HasPrefix(path, "fields."):
		name := strings.TrimPrefix(path, "fields.")
		for _, part := range strings.Split(f.columns, ",") {
			if n, _, _ := tail.SplitColumn(part); n == name {
				return "--columns " + strings.TrimSpace(part)
			}
		}
		return "--columns " + name
	case strings.HasPrefix(path, "when["):
		var i int
		if _, err := fmt.Sscanf(path, "when[%d]", &i); err == nil && i < len(exprs) {
			flagName := "--where"
			if i >= len(f.where) {
				flagName = "--where-cel"
			}
			return fmt.Sprintf("%s %q", flagName, exprs[i])
		}
	case path == "labelSelector":
		return "-l " + f.selector
	}
	return path
}

// noteDefaultNamespace says, when no -n or -A was given, which namespace tail
// follows (the kubeconfig context's, as kubectl's "No resources found in
// default namespace" does), so that an empty stream is not a puzzle.
func noteDefaultNamespace(e *env, opts tail.Options) {
	for _, r := range opts.Resources {
		if r.Namespaced {
			fmt.Fprintf(e.stderr, "dynwatch tail: following namespace %q (the kubeconfig context's); -n NS for another, -A for all namespaces\n", opts.Namespace)
			return
		}
	}
}

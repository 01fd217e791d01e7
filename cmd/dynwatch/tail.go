package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/dynwatch/dynwatch/rules"
	"github.com/dynwatch/dynwatch/tail"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ", ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// parseInterleaved parses flags that may come before, between or after the
// positional arguments, as kubectl users write them, and returns the positionals.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, int, bool) {
	var pos []string
	for {
		if code, ok := parse(fs, args); !ok {
			return nil, code, false
		}
		if fs.NArg() == 0 {
			return pos, exitOK, true
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func cmdTail(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "tail", "RESOURCE[,RESOURCE…] [-n NS|-A] [-l SELECTOR] [--where EXPR]… [--columns NAME=PATH,…] [-o table|json] [--initial]",
		"Follows several resource types at once and prints one line per event (table) or the event payload\n"+
			"(json, one object a line, rule \"tail\"). RESOURCE is resolved like kubectl does: plural, singular,\n"+
			"kind or short name, optionally with .group (widgets.example.com). Ctrl-C stops it.\n\n"+tail.WhereSyntax)
	var kf kubeFlags
	var lf logFlags
	kf.register(fs)
	lf.register(fs)
	ns := fs.String("n", "", "namespace (default: the kubeconfig context's namespace)")
	fs.StringVar(ns, "namespace", "", "namespace (same as -n)")
	all := fs.Bool("A", false, "all namespaces")
	fs.BoolVar(all, "all-namespaces", false, "all namespaces (same as -A)")
	selector := fs.String("l", "", "label selector, e.g. app=web,tier!=cache")
	var where stringList
	fs.Var(&where, "where", "filter 'PATH OP VALUE', '!PATH' or 'PATH'; repeatable, all must hold")
	columns := fs.String("columns", "", "extra table columns NAME=PATH,… (gjson paths); in JSON, payload fields")
	output := fs.String("o", "table", "output: table or json")
	initial := fs.Bool("initial", false, "also print the objects that exist at start (as add)")
	pos, code, ok := parseInterleaved(fs, args)
	if !ok {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "dynwatch tail: "+format+"\n", a...)
		return exitUsage
	}
	if len(pos) != 1 {
		fs.Usage()
		return usageErr("give the resources as one argument, comma-separated (e.g. deployments,widgets.example.com)")
	}
	if *output != "table" && *output != "json" {
		return usageErr("-o: want table or json, got %q", *output)
	}
	if *all && *ns != "" {
		return usageErr("-n and -A exclude each other")
	}
	opts := tail.Options{Output: *output, Initial: *initial, LabelSelector: *selector, Out: e.stdout}
	for _, w := range where {
		cond, err := tail.ParseWhere(w)
		if err != nil {
			return usageErr("--where: %v\n\n%s", err, tail.WhereSyntax)
		}
		opts.Where = append(opts.Where, cond)
	}
	cols, err := tail.ParseColumns(*columns)
	if err != nil {
		return usageErr("%v", err)
	}
	opts.Columns = cols
	if _, err := opts.Rule(); err != nil {
		// Paths, values and the selector are checked before anything connects.
		var ps rules.Problems
		if errors.As(err, &ps) {
			var msgs []string
			for _, p := range ps {
				msgs = append(msgs, strings.TrimPrefix(p.Path, ".")+": "+p.Msg)
			}
			err = errors.New(strings.Join(msgs, "; "))
		}
		return usageErr("%v\n\n%s", err, tail.WhereSyntax)
	}
	log, err := lf.logger(e.stderr)
	if err != nil {
		return usageErr("%v", err)
	}
	opts.Logger = log
	c, err := kf.connect()
	if err != nil {
		fmt.Fprintln(e.stderr, "dynwatch tail:", err)
		return exitFailure
	}
	if !*all {
		opts.Namespace = *ns
		if opts.Namespace == "" {
			opts.Namespace = kf.defaultNamespace()
		}
	}
	cat, err := c.catalog(e.stderr)
	if err != nil {
		fmt.Fprintln(e.stderr, "dynwatch tail:", err)
		return exitFailure
	}
	var bad []string
	for _, name := range strings.Split(pos[0], ",") {
		r, err := cat.Find(name)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		opts.Resources = append(opts.Resources, r)
	}
	if len(bad) > 0 {
		return usageErr("%s", strings.Join(bad, "\n"))
	}
	if opts.Namespace != "" {
		for _, r := range opts.Resources {
			if !r.Namespaced {
				fmt.Fprintf(e.stderr, "dynwatch tail: note: %s is cluster-scoped; -n does not apply to it\n", r.Name())
			}
		}
	}
	ctx, _, stop := signalContext(ctx, e)
	defer stop()
	if err := tail.Run(ctx, c.dyn, opts); err != nil {
		fmt.Fprintln(e.stderr, "dynwatch tail:", err)
		return exitFailure
	}
	return exitOK
}

package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/dynwatch/dynwatch/audit"
	"github.com/dynwatch/dynwatch/health"
)

func cmdAudit(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "audit", "--config FILE [-o table|json] [--chunk-size N] [--health STATUS,…]",
		"Lists the current objects of every rule's resources once (a page at a time), evaluates each rule's\n"+
			"namespaces, labelSelector and when on them, and prints the matches, each with its object's health\n"+
			"(HEALTH; \"health\": {status, message} in -o json): Current, InProgress, Failed, Terminating or\n"+
			"Unknown, as kstatus computes it, or as the config's health list says for a kind.\n\n"+auditExitCodes)
	var kf kubeFlags
	kf.register(fs)
	lf := commandLogs(fs)
	config := fs.String("config", "", "the config file (required)")
	output := fs.StringP("output", "o", "table", "output: table or json (one payload per line, type \"audit\")")
	chunk := fs.Int64("chunk-size", 500, "objects per LIST page")
	healthFlag := fs.String("health", "", "keep only the matches whose object's health is one of these, e.g. Failed,InProgress (of Current, InProgress, Failed, Terminating, Unknown)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if code, ok := lf.apply(fs, e, &kf); !ok {
		return code
	}
	path, msg := configArg("audit", *config, fs.Args())
	if msg != "" {
		return usageError(fs, "%s", msg)
	}
	*config = path
	if *output != "table" && *output != "json" {
		return usageError(fs, "-o: want table or json, got %q", *output)
	}
	if *chunk <= 0 {
		return usageError(fs, "--chunk-size must be positive")
	}
	var healthFilter []string
	if fs.Changed("health") {
		var err error
		if healthFilter, err = health.ParseStatuses(*healthFlag); err != nil {
			return usageError(fs, "--health: %v", err)
		}
	}
	file, code := loadConfig(e.stderr, *config)
	if file == nil {
		return code
	}
	res, err := auditClusters(ctx, e, &kf, file, *chunk, healthFilter)
	if err != nil {
		fmt.Fprintln(e.stderr, "dynwatch audit:", err)
		return exitFailure
	}
	if *output == "json" {
		err = audit.WriteJSON(e.stdout, res.Findings)
	} else if len(res.Findings) > 0 {
		err = audit.WriteTable(e.stdout, res.Findings)
	}
	if err != nil {
		return exitFailure
	}
	incomplete := reportUnlisted(e.stderr, res)
	switch {
	case len(res.Findings) > 0:
		if incomplete {
			fmt.Fprintln(e.stderr, "dynwatch audit: rules matched (exit 1), and the audit is incomplete too: see what could not be listed above")
		}
		return exitFailure
	case incomplete:
		fmt.Fprintln(e.stderr, "dynwatch audit: nothing matched in what could be listed, but the audit is incomplete (exit 3): "+
			"check the kubeconfig and --context, and that dynwatch may list what the rules select ('dynwatch rbac --config FILE' prints the RBAC it needs)")
		return exitIncomplete
	}
	if *output == "table" {
		fmt.Fprintln(e.stderr, "dynwatch audit: no rule matched")
	}
	return exitOK
}

// auditExitCodes is audit's part of its help: what each exit code means.
const auditExitCodes = `Exit codes:
  0  nothing matched, and every selected resource was listed
  1  something matched (the matches are printed), even if some resource could not be listed
  2  bad usage or an invalid config
  3  incomplete: nothing matched, but some resource or cluster could not be listed (the API
     server could not be reached, or listing was forbidden); stderr says which`

// reportUnlisted writes, in a stable order, the clusters audit could not
// reach and the resources it could not list; it reports whether there were
// any (the audit is incomplete).
func reportUnlisted(w io.Writer, res *auditResult) bool {
	for _, name := range slices.Sorted(maps.Keys(res.Unreached)) {
		fmt.Fprintf(w, "dynwatch audit: cannot reach %s: %v\n", name, res.Unreached[name])
	}
	for _, key := range slices.Sorted(maps.Keys(res.Failed)) {
		fmt.Fprintf(w, "dynwatch audit: cannot list %s: %v\n", key, res.Failed[key])
	}
	return len(res.Unreached)+len(res.Failed) > 0
}

// isTerminal reports whether w is a terminal (progress lines are for people,
// not for pipes and files).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

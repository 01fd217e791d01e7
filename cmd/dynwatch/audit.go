package main

import (
	"context"
	"fmt"
	"os"

	"github.com/dynwatch/dynwatch/audit"
)

func cmdAudit(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "audit", "--config FILE [-o table|json] [--chunk-size N]",
		"Lists the current objects of every rule's resources once (a page at a time), evaluates each rule's\n"+
			"namespaces, labelSelector and when on them, and prints the matches. Exits 1 when anything matched,\n"+
			"else 3 when a resource could not be listed (the audit is incomplete), else 0; 2 on bad usage or an\n"+
			"invalid config.")
	var kf kubeFlags
	kf.register(fs)
	lf := commandLogs(fs)
	config := fs.String("config", "", "the config file (required)")
	output := fs.StringP("output", "o", "table", "output: table or json (one payload per line, type \"audit\")")
	chunk := fs.Int64("chunk-size", 500, "objects per LIST page")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if code, ok := lf.apply(fs, e, &kf); !ok {
		return code
	}
	if *config == "" || fs.NArg() > 0 {
		return usageError(fs, "--config FILE is required and no arguments are taken")
	}
	if *output != "table" && *output != "json" {
		return usageError(fs, "-o: want table or json, got %q", *output)
	}
	if *chunk <= 0 {
		return usageError(fs, "--chunk-size must be positive")
	}
	file, code := loadConfig(e.stderr, *config)
	if file == nil {
		return code
	}
	res, err := auditClusters(ctx, e, &kf, file, *chunk)
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
	for key, lerr := range res.Failed {
		fmt.Fprintf(e.stderr, "dynwatch audit: cannot list %s: %v\n", key, lerr)
	}
	if len(res.Findings) > 0 {
		return exitFailure
	}
	if len(res.Failed) > 0 {
		fmt.Fprintln(e.stderr, "dynwatch audit: some resources could not be listed: the audit is incomplete (exit 3)")
		return exitIncomplete
	}
	if *output == "table" {
		fmt.Fprintln(e.stderr, "dynwatch audit: no rule matched")
	}
	return exitOK
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

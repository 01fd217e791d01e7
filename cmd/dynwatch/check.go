package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dynwatch/dynwatch/config"
	dwdiscovery "github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/rbac"
)

func cmdCheck(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "check", "FILE | --config FILE [--cluster] [--strict]",
		"Validates a config file offline and prints every problem as FILE:LINE: FIELD.PATH: message.\n"+
			"The file is the argument or --config (both at once must name the same file).\n"+
			"A credential an action sends in clear, or a certificate check turned off, is a warning;\n"+
			"--strict (or security.allowInsecure: false in the file) makes it a problem.\n"+
			"With --cluster, also resolves each rule's selectors through discovery, prints the resources\n"+
			"each rule will watch, and checks list and watch permission on each (SelfSubjectAccessReview);\n"+
			"once every check has run it prints the problems first, then each rule's resources, then the verdict.\n"+
			"Exits 0 when all is well, 1 when a rule selects nothing or lacks permission, 2 on an invalid file.")
	var kf kubeFlags
	kf.register(fs)
	lf := commandLogs(fs)
	cfgPath := fs.String("config", "", "the config file (or give it as the argument)")
	cluster := fs.Bool("cluster", false, "also check the config against the cluster")
	strictEnv := fs.Bool("strict-env", false, "a ${VAR} that is not set is an error, as for run (default: a warning, the field unchecked)")
	strict := fs.Bool("strict", false, "a credential sent in clear or a certificate check turned off is an error, as with security.allowInsecure: false (default: a warning)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if code, ok := lf.apply(fs, e, &kf); !ok {
		return code
	}
	path, msg := configArg("check", *cfgPath, fs.Args())
	if msg != "" {
		return usageError(fs, "%s", msg)
	}
	file, code := loadConfigWith(e.stderr, path, config.Options{UnsetEnvWarns: !*strictEnv, Strict: *strict})
	if file == nil {
		return code
	}
	summary := fmt.Sprintf("%d rule(s), %d action(s)", len(file.Rules), len(file.Config.Actions))
	if !*cluster {
		fmt.Fprintf(e.stdout, "%s: ok: %s\n", path, summary)
		return exitOK
	}
	var r checkReport
	if len(file.Config.Clusters) > 0 {
		checkClusters(ctx, e, &kf, file, &r)
	} else {
		checkCluster(ctx, e, &kf, file, &r)
	}
	return r.finish(e, path, summary)
}

// sameFile reports whether two paths name one file: the same path once
// cleaned, or (relative and absolute, through a link) one file on disk.
func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// configArg is the config file check was given: its argument or --config,
// or a usage problem ("" when there is none).
func configArg(command, flagPath string, args []string) (path, problem string) {
	switch {
	case len(args) > 1:
		return "", fmt.Sprintf("one config file at a time, got %d arguments: %s", len(args), strings.Join(args, " "))
	case len(args) == 1 && flagPath != "" && !sameFile(args[0], flagPath):
		return "", fmt.Sprintf("two config files: %s (the argument) and %s (--config): give one", args[0], flagPath)
	case len(args) == 1:
		return args[0], ""
	case flagPath == "":
		return "", "--config FILE is required (or give the file as the argument: " + progName + " " + command + " FILE)"
	}
	return flagPath, ""
}

// checkCluster checks the rules of file against the command line's cluster
// (discovery and permissions) and, with leader election, the Lease.
func checkCluster(ctx context.Context, e *env, kf *kubeFlags, file *plan.File, r *checkReport) {
	c, err := kf.connect()
	var cat *dwdiscovery.Catalog
	if err == nil {
		cat, err = c.catalog(e.stderr)
	}
	if err != nil {
		r.unreached(e, "the API server", err)
		return
	}
	problems, err := rbac.CheckAccess(ctx, &r.details, c.typed.AuthorizationV1(), file, cat)
	r.problems = append(r.problems, problems...)
	if err == nil && file.Config.LeaderElection != nil {
		problems, err = checkLease(ctx, &r.details, c.typed.AuthorizationV1(), file.Config.LeaderElection, file.Config.Shards)
		r.problems = append(r.problems, problems...)
	}
	if err != nil {
		r.unreached(e, "the API server", err)
	}
}

// checkReport is what check --cluster found, written once every check has
// run: the problems first, then each check's details, then the verdict.
type checkReport struct {
	problems []string
	details  bytes.Buffer
}

// unreached notes that what (the API server, a cluster) could not be asked.
func (r *checkReport) unreached(e *env, what string, err error) {
	fmt.Fprintf(e.stderr, "dynwatch check: %s: %v\n", what, err)
	r.problems = append(r.problems, fmt.Sprintf("%s cannot be reached or asked: %v", what, err))
}

// finish writes the report and returns check's exit code.
func (r *checkReport) finish(e *env, path, summary string) int {
	if len(r.problems) == 0 {
		_, _ = e.stdout.Write(r.details.Bytes())
		fmt.Fprintf(e.stdout, "%s: ok: %s; every rule selects resources that dynwatch may list and watch\n", path, summary)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "%d problem(s) against the cluster:\n", len(r.problems))
	for _, p := range r.problems {
		fmt.Fprintf(e.stdout, "  FAIL: %s\n", p)
	}
	fmt.Fprintln(e.stdout)
	_, _ = e.stdout.Write(r.details.Bytes())
	fmt.Fprintf(e.stdout, "%s: FAIL: %d problem(s) against the cluster (listed first); the file itself is valid: %s\n", path, len(r.problems), summary)
	fmt.Fprintf(e.stderr, "dynwatch check: a cluster cannot be reached, or some rules select nothing or lack permission, or leader election lacks it on its Lease (see above): "+
		"fix the selectors, and grant what is DENIED (%s rbac --config %s prints the RBAC the config needs)\n", progName, path)
	return exitFailure
}

package main

import (
	"context"
	"fmt"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/rbac"
)

func cmdCheck(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "check", "--config FILE [--cluster] [--strict]",
		"Validates a config file offline and prints every problem as FILE:LINE: FIELD.PATH: message.\n"+
			"A credential an action sends in clear, or a certificate check turned off, is a warning;\n"+
			"--strict (or security.allowInsecure: false in the file) makes it a problem.\n"+
			"With --cluster, also resolves each rule's selectors through discovery, prints the resources\n"+
			"each rule will watch, and checks list and watch permission on each (SelfSubjectAccessReview).\n"+
			"Exits 0 when all is well, 1 when a rule selects nothing or lacks permission, 2 on an invalid file.")
	var kf kubeFlags
	kf.register(fs)
	lf := commandLogs(fs)
	cfgPath := fs.String("config", "", "the config file (required)")
	cluster := fs.Bool("cluster", false, "also check the config against the cluster")
	strictEnv := fs.Bool("strict-env", false, "a ${VAR} that is not set is an error, as for run (default: a warning, the field unchecked)")
	strict := fs.Bool("strict", false, "a credential sent in clear or a certificate check turned off is an error, as with security.allowInsecure: false (default: a warning)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if code, ok := lf.apply(fs, e, &kf); !ok {
		return code
	}
	if *cfgPath == "" || fs.NArg() > 0 {
		return usageError(fs, "--config FILE is required and no arguments are taken")
	}
	file, code := loadConfigWith(e.stderr, *cfgPath, config.Options{UnsetEnvWarns: !*strictEnv, Strict: *strict})
	if file == nil {
		return code
	}
	fmt.Fprintf(e.stdout, "%s: ok: %d rule(s), %d action(s)\n", *cfgPath, len(file.Rules), len(file.Config.Actions))
	if !*cluster {
		return exitOK
	}
	if len(file.Config.Clusters) > 0 {
		return checkClusters(ctx, e, &kf, file)
	}
	c, err := kf.connect()
	if err != nil {
		fmt.Fprintln(e.stderr, "dynwatch check:", err)
		return exitFailure
	}
	cat, err := c.catalog(e.stderr)
	if err != nil {
		fmt.Fprintln(e.stderr, "dynwatch check:", err)
		return exitFailure
	}
	ok, err := rbac.CheckAccess(ctx, e.stdout, c.typed.AuthorizationV1(), file, cat)
	if err == nil && file.Config.LeaderElection != nil {
		var leaseOK bool
		leaseOK, err = checkLease(ctx, e.stdout, c.typed.AuthorizationV1(), file.Config.LeaderElection, file.Config.Shards)
		ok = ok && leaseOK
	}
	if err != nil {
		fmt.Fprintln(e.stderr, "dynwatch check:", err)
		return exitFailure
	}
	if !ok {
		fmt.Fprintln(e.stderr, "dynwatch check: some rules select nothing or lack permission, or leader election lacks it on its Lease (see above)")
		return exitFailure
	}
	return exitOK
}

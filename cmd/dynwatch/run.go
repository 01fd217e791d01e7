package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/daemon"
	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/rbac"
)

func cmdRun(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "run", "--config FILE [flags]",
		"Watches the resources the config's rules select and delivers matching events to their actions.\n"+
			"Stops cleanly on SIGINT or SIGTERM, draining the action queues for up to shutdownGrace.\n"+
			"SIGHUP, or a change of the file, reloads the config; an invalid one is logged and the old one keeps running.")
	var kf kubeFlags
	var lf logFlags
	kf.register(fs)
	lf.register(fs, "info", "debug")
	config := fs.String("config", "", "the config file (required); reloaded on SIGHUP and when its content changes")
	reloadEvery := fs.Duration("config-check-interval", 2*time.Second, "how often the config file is checked for changes")
	resetState := fs.Bool("reset-state", false, "discard the state file of state.path (saying how much it held) and start over")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *config == "" || fs.NArg() > 0 {
		return usageError(fs, "--config FILE is required and no arguments are taken")
	}
	log, err := lf.logger(e.stderr)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	klog.SetSlogLogger(log)
	file, code := loadConfig(e.stderr, *config)
	if file == nil {
		return code
	}
	logProxies(log, file)
	kf.log = log
	c, err := kf.connect()
	if err != nil {
		log.Error("cannot reach the cluster", "err", err)
		return exitFailure
	}
	ctx, hup, stop := signalContext(ctx, e)
	defer stop()
	err = daemon.Run(ctx, daemon.Options{
		File:                file,
		ConfigCheckInterval: *reloadEvery,
		ResetState:          *resetState,
		Informers:           c.raw,
		Discovery:           c.disc,
		Kube:                c.typed,
		Logger:              log,
		Stdout:              e.stdout,
		Source:              c.host,
		Hup:                 hup,
	})
	if err != nil {
		return exitFailure
	}
	return exitOK
}

// loadConfig loads and validates a config file; on failure it prints every
// problem, one per line, and returns the exit code.
func loadConfig(stderr io.Writer, path string) (*plan.File, int) {
	return loadConfigWith(stderr, path, config.Options{})
}

// loadConfigWith is loadConfig with the config's load options.
func loadConfigWith(stderr io.Writer, path string, o config.Options) (*plan.File, int) {
	file, err := plan.LoadWith(path, o)
	if err != nil {
		var ps config.Problems
		if errors.As(err, &ps) {
			for _, p := range ps {
				fmt.Fprintln(stderr, p.Error())
			}
			fmt.Fprintf(stderr, "%s: %d problem(s); nothing was started\n", path, len(ps))
			return nil, exitUsage
		}
		fmt.Fprintln(stderr, "dynwatch:", err)
		return nil, exitUsage
	}
	for _, w := range file.Warnings() {
		fmt.Fprintln(stderr, w.Error())
	}
	return file, exitOK
}

func cmdCheck(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "check", "--config FILE [--cluster]",
		"Validates a config file offline and prints every problem as FILE:LINE: FIELD.PATH: message.\n"+
			"With --cluster, also resolves each rule's selectors through discovery, prints the resources\n"+
			"each rule will watch, and checks list and watch permission on each (SelfSubjectAccessReview).\n"+
			"Exits 0 when all is well, 1 when a rule selects nothing or lacks permission, 2 on an invalid file.")
	var kf kubeFlags
	kf.register(fs)
	lf := commandLogs(fs)
	cfgPath := fs.String("config", "", "the config file (required)")
	cluster := fs.Bool("cluster", false, "also check the config against the cluster")
	strictEnv := fs.Bool("strict-env", false, "a ${VAR} that is not set is an error, as for run (default: a warning, the field unchecked)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if code, ok := lf.apply(fs, e, &kf); !ok {
		return code
	}
	if *cfgPath == "" || fs.NArg() > 0 {
		return usageError(fs, "--config FILE is required and no arguments are taken")
	}
	file, code := loadConfigWith(e.stderr, *cfgPath, config.Options{UnsetEnvWarns: !*strictEnv})
	if file == nil {
		return code
	}
	fmt.Fprintf(e.stdout, "%s: ok: %d rule(s), %d action(s)\n", *cfgPath, len(file.Rules), len(file.Config.Actions))
	if !*cluster {
		return exitOK
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
		leaseOK, err = checkLease(ctx, e.stdout, c.typed.AuthorizationV1(), file.Config.LeaderElection)
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

func cmdRBAC(_ context.Context, e *env, args []string) int {
	fs := flagSet(e, "rbac", "--config FILE [--cluster] [--namespace NS] [--service-account NAME]",
		"Prints the least-privilege RBAC the config needs: the ServiceAccount; list and watch only, on exactly\n"+
			"the resources it selects (a ClusterRole where a rule watches all namespaces or a cluster-scoped\n"+
			"resource, a Role per namespace where rules name namespaces) and their bindings; with leaderElection,\n"+
			"get/update on the one Lease. Without --cluster each selector must give group and resource exactly;\n"+
			"with it, globs and kinds are resolved through discovery.")
	var kf kubeFlags
	kf.register(fs)
	lf := commandLogs(fs)
	config := fs.String("config", "", "the config file (required)")
	cluster := fs.Bool("cluster", false, "resolve selectors through discovery")
	nsFlag := fs.String("namespace", "dynwatch", "the namespace of the ServiceAccount")
	saFlag := fs.String("service-account", "dynwatch", "the ServiceAccount the roles are bound to (NAMESPACE/NAME also works)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if code, ok := lf.apply(fs, e, &kf); !ok {
		return code
	}
	ns, name := *nsFlag, *saFlag
	if n, s, found := strings.Cut(*saFlag, "/"); found {
		ns, name = n, s
	}
	if *config == "" || fs.NArg() > 0 || ns == "" || name == "" {
		return usageError(fs, "--config FILE is required, --namespace and --service-account must not be empty, and no arguments are taken")
	}
	file, code := loadConfig(e.stderr, *config)
	if file == nil {
		return code
	}
	var cat *discovery.Catalog
	if *cluster {
		c, err := kf.connect()
		if err == nil {
			cat, err = c.catalog(e.stderr)
		}
		if err != nil {
			fmt.Fprintln(e.stderr, "dynwatch rbac:", err)
			return exitFailure
		}
	}
	grants, err := rbac.Grants(file, cat)
	if err != nil {
		fmt.Fprintln(e.stderr, err)
		return exitUsage
	}
	var notes []string
	if cat != nil {
		notes = rbac.GlobNotes(file, cat)
	}
	out := rbac.Output{SA: rbac.ServiceAccount{Namespace: ns, Name: name}, Source: filepath.Base(*config), Notes: notes}
	if le := file.Config.LeaderElection; le != nil {
		out.Lease = &rbac.ServiceAccount{Namespace: le.Namespace, Name: le.Name}
	}
	if err := rbac.WriteYAML(e.stdout, grants, out); err != nil {
		fmt.Fprintln(e.stderr, "dynwatch rbac:", err)
		return exitFailure
	}
	return exitOK
}

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/rbac"
)

func cmdRBAC(_ context.Context, e *env, args []string) int {
	fs := flagSet(e, "rbac", "--config FILE [--cluster] [--namespace NS] [--service-account NAME]",
		"Prints the least-privilege RBAC the config needs: the ServiceAccount; list and watch only, on exactly\n"+
			"the resources it selects (a ClusterRole where a rule watches all namespaces or a cluster-scoped\n"+
			"resource, a Role per namespace where rules name namespaces) and their bindings; with leaderElection,\n"+
			"get/update on the one Lease (with shards, update on each shard's and get on any Lease of its\n"+
			"namespace). Without --cluster each selector must give group and resource exactly;\n"+
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
	path, msg := configArg("rbac", *config, fs.Args())
	if msg != "" {
		return usageError(fs, "%s", msg)
	}
	*config = path
	if ns == "" || name == "" {
		return usageError(fs, "--namespace and --service-account must not be empty")
	}
	file, code := loadConfig(e.stderr, *config)
	if file == nil {
		return code
	}
	base := rbac.Output{SA: rbac.ServiceAccount{Namespace: ns, Name: name}, Source: filepath.Base(*config)}
	if len(file.Config.Clusters) > 0 {
		return rbacClusters(e, &kf, file, *cluster, base)
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
		if sh := file.Config.Shards; sh != nil {
			out.LeaseShards = sh.Count
		}
	}
	if err := rbac.WriteYAML(e.stdout, grants, out); err != nil {
		fmt.Fprintln(e.stderr, "dynwatch rbac:", err)
		return exitFailure
	}
	return exitOK
}

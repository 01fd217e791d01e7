package main

import (
	"context"
	"fmt"
	"maps"

	k8sdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dynwatch/dynwatch/audit"
	"github.com/dynwatch/dynwatch/config"
	dwdiscovery "github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/rbac"
	"github.com/dynwatch/dynwatch/watcher"
)

// forCluster returns the kubeconfig flags of a named cluster of the config:
// its kubeconfig (default: the command line's) and context (default: the
// command line's --context with the command line's file, else the file's
// current context).
func (k *kubeFlags) forCluster(spec config.ClusterSpec) *kubeFlags {
	out := &kubeFlags{kubeconfig: k.kubeconfig, context: k.context, log: k.log}
	if spec.Kubeconfig != "" {
		out.kubeconfig, out.context = spec.Kubeconfig, ""
	}
	if spec.Context != "" {
		out.context = spec.Context
	}
	if out.log != nil {
		out.log = out.log.With("cluster", spec.Name)
	}
	return out
}

// connectCluster builds the clients of a named cluster, each with its own
// rate limits; reaching it is not needed (a cluster down at start is
// retried by the watcher).
func (k *kubeFlags) connectCluster(spec config.ClusterSpec) (*dyninformer.Client, k8sdiscovery.DiscoveryInterface, error) {
	c, err := k.forCluster(spec).connect()
	if err != nil {
		return nil, nil, err
	}
	return c.raw, c.disc, nil
}

// fingerprintCluster hashes the kubeconfig files a named cluster's clients
// are built from (its kubeconfig, else the command line's: --kubeconfig or
// $KUBECONFIG's files or ~/.kube/config), so that a rotated one is read
// again (the in-cluster token file is read again by the clients themselves).
func (k *kubeFlags) fingerprintCluster(spec config.ClusterSpec) string {
	kc := k.forCluster(spec).kubeconfig
	if kc != "" {
		return watcher.FileFingerprint(kc)
	}
	return watcher.FileFingerprint(clientcmd.NewDefaultClientConfigLoadingRules().GetLoadingPrecedence()...)
}

// checkClusters is `check --cluster` with clusters: each cluster's rules
// against its discovery and its permissions, one section per cluster (a
// cluster that cannot be reached is said and fails the check, the others
// are checked still), and leader election's Lease in the command line's
// cluster, where it lives.
func checkClusters(ctx context.Context, e *env, kf *kubeFlags, file *plan.File, r *checkReport) {
	for _, spec := range file.Config.Clusters {
		fmt.Fprintf(&r.details, "cluster %s:\n", spec.Name)
		c, err := kf.forCluster(spec).connect()
		var cat *dwdiscovery.Catalog
		if err == nil {
			cat, err = c.catalog(e.stderr)
		}
		if err == nil {
			var problems []string
			problems, err = rbac.CheckAccess(ctx, &r.details, c.typed.AuthorizationV1(), file.ForCluster(spec.Name), cat)
			for _, p := range problems {
				r.problems = append(r.problems, "cluster "+spec.Name+": "+p)
			}
		}
		if err != nil {
			fmt.Fprintf(&r.details, "  FAIL: cannot be reached or asked: %v\n", err)
			r.unreached(e, "cluster "+spec.Name, err)
		}
	}
	if file.Config.LeaderElection == nil {
		return
	}
	c, err := kf.connect()
	if err == nil {
		fmt.Fprintln(&r.details, "leader election (the command line's cluster):")
		var problems []string
		problems, err = checkLease(ctx, &r.details, c.typed.AuthorizationV1(), file.Config.LeaderElection, file.Config.Shards)
		r.problems = append(r.problems, problems...)
	}
	if err != nil {
		r.unreached(e, "the command line's cluster (leader election's Lease)", err)
	}
}

// rbacClusters is `rbac` with clusters: each cluster's roles, for its
// rules (resolved through its discovery with --cluster), in a section of
// their own to apply in that cluster; then, with leaderElection, the Lease's
// role, to apply in the command line's cluster, where the Lease lives.
func rbacClusters(e *env, kf *kubeFlags, file *plan.File, resolve bool, base rbac.Output) int {
	for i, spec := range file.Config.Clusters {
		mine := file.ForCluster(spec.Name)
		var cat *dwdiscovery.Catalog
		if resolve {
			c, err := kf.forCluster(spec).connect()
			if err == nil {
				cat, err = c.catalog(e.stderr)
			}
			if err != nil {
				fmt.Fprintf(e.stderr, "dynwatch rbac: cluster %s: %v\n", spec.Name, err)
				return exitFailure
			}
		}
		grants, err := rbac.Grants(mine, cat)
		if err != nil {
			fmt.Fprintln(e.stderr, err)
			return exitUsage
		}
		out := base
		if cat != nil {
			out.Notes = rbac.GlobNotes(mine, cat)
		}
		if i > 0 {
			fmt.Fprintln(e.stdout, "---")
		}
		fmt.Fprintf(e.stdout, "# cluster %s: apply in that cluster (bind the roles to the user its kubeconfig names, if not this ServiceAccount)\n", spec.Name)
		if err := rbac.WriteYAML(e.stdout, grants, out); err != nil {
			fmt.Fprintln(e.stderr, "dynwatch rbac:", err)
			return exitFailure
		}
	}
	if le := file.Config.LeaderElection; le != nil {
		out := base
		out.Lease = &rbac.ServiceAccount{Namespace: le.Namespace, Name: le.Name}
		fmt.Fprintln(e.stdout, "---")
		fmt.Fprintln(e.stdout, "# leader election: apply in the cluster dynwatch runs in (the command line's), where the Lease lives")
		if err := rbac.WriteYAML(e.stdout, nil, out); err != nil {
			fmt.Fprintln(e.stderr, "dynwatch rbac:", err)
			return exitFailure
		}
	}
	return exitOK
}

// auditClusters audits the command line's cluster or, with clusters, each
// cluster with its rules; a cluster that cannot be reached is one whose
// resources could not be listed (the audit is incomplete), the others are
// audited still.
func auditClusters(ctx context.Context, e *env, kf *kubeFlags, file *plan.File, chunk int64, healthFilter []string) (*auditResult, error) {
	specs := file.Config.Clusters
	if len(specs) == 0 {
		specs = []config.ClusterSpec{{}}
	}
	all := &auditResult{Result: audit.Result{Listed: map[string]int{}, Failed: map[string]error{}}, Unreached: map[string]error{}}
	for _, spec := range specs {
		k := kf
		if spec.Name != "" {
			k = kf.forCluster(spec)
		}
		c, err := k.connect()
		var cat *dwdiscovery.Catalog
		if err == nil {
			cat, err = c.catalog(e.stderr)
		}
		if err != nil {
			// Nothing of this cluster is listed: the audit is incomplete
			// (exit 3), not a failure that reads as a finding.
			all.Unreached[clusterWords(spec.Name)] = err
			continue
		}
		opts := audit.Options{File: file.ForCluster(spec.Name), Catalog: cat, Client: c.raw, PageSize: chunk, Cluster: spec.Name, Health: healthFilter}
		if isTerminal(e.stderr) {
			opts.Progress = e.stderr
		}
		res, err := audit.Run(ctx, opts)
		if err != nil {
			return nil, err
		}
		all.Findings = append(all.Findings, res.Findings...)
		maps.Copy(all.Listed, res.Listed)
		maps.Copy(all.Failed, res.Failed)
	}
	return all, nil
}

// auditResult is what audit found in every cluster, and the clusters it
// could not reach at all (by clusterWords).
type auditResult struct {
	audit.Result
	Unreached map[string]error
}

// clusterWords names a cluster in a message: "cluster NAME", or "the API
// server" for the command line's one cluster.
func clusterWords(name string) string {
	if name == "" {
		return "the API server"
	}
	return "cluster " + name
}

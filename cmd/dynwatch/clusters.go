package main

import (
	k8sdiscovery "k8s.io/client-go/discovery"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/dyninformer"
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

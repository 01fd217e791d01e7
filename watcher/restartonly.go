package watcher

import (
	"errors"

	"github.com/dynwatch/dynwatch/plan"
)

// ErrClustersRestart refuses a config that adds the clusters block to one
// without it, or removes it: the per-cluster label of the metrics and the
// keys of the records are decided at start.
var ErrClustersRestart = errors.New("clusters: going from no clusters to some, or back, applies after a restart (adding or removing clusters within the block does not)")

// ClustersRestartOnly returns ErrClustersRestart when next has clusters and
// running has none, or the other way round.
func ClustersRestartOnly(running, next *plan.File) error {
	if (len(running.Config.Clusters) > 0) != (len(next.Config.Clusters) > 0) {
		return ErrClustersRestart
	}
	return nil
}

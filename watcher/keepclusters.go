package watcher

import (
	"fmt"
	"log/slog"

	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/state"
)

// keepClusters makes the state file hold the records of file's clusters
// only, at start (see state.Store.KeepClusters): the records of a cluster
// the config no longer names (renamed, removed while dynwatch was stopped,
// or the one cluster once the config has clusters, and the other way
// round) are dropped, so that naming it again later replays nothing stale.
// When the config goes from no clusters to some, the one cluster's records
// become those of the cluster that uses the command line's kubeconfig and
// no context, if exactly one does: it is the same API server. A reload
// keeps a removed cluster's records (added back, it is compared with them).
func keepClusters(store *state.Store, file *plan.File, log *slog.Logger) error {
	keep, adopt := []string{""}, ""
	if cs := file.Config.Clusters; len(cs) > 0 {
		keep = file.Config.ClusterNames()
		for _, c := range cs {
			if c.Kubeconfig == "" && c.Context == "" {
				if adopt != "" {
					adopt = "" // two do: which one is ambiguous
					break
				}
				adopt = c.Name
			}
		}
	}
	kept, err := store.KeepClusters(keep, adopt)
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if kept.Adopted > 0 || kept.AdoptedQueued > 0 {
		log.Info("state: the records kept without clusters are now those of the cluster that uses the command line's kubeconfig", "cluster", adopt, "records", kept.Adopted, "queued", kept.AdoptedQueued)
	}
	if len(kept.DroppedFrom) > 0 {
		log.Info("state: dropped the records of clusters the config does not name (renamed, removed, or the one cluster of a config without clusters)", "records", kept.Dropped, "clusters", quoted(kept.DroppedFrom))
	}
	return nil
}

// quoted lists cluster names, "" (the one cluster) shown as "".
func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

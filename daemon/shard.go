package daemon

import (
	"fmt"
	"os"

	k8sdiscovery "k8s.io/client-go/discovery"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/state"
)

// setShard reads this process's shard from the config (shards; the index
// from $POD_NAME's ordinal when the file gives none) and makes the informers'
// client keep only its objects. Shards are read at start, as leaderElection
// is: a reload does not change them; a changed shards takes effect at the
// next start (a reshard, see reshardState).
func (d *daemon) setShard() error {
	s := d.o.File.Config.Shards
	if s == nil {
		return nil
	}
	index, err := s.ShardIndex(os.Getenv("POD_NAME"))
	if err != nil {
		return err
	}
	d.shard = dyninformer.NewShard(s.Count, index, s.By == config.ShardByNamespace)
	d.o.Informers = d.o.Informers.WithShard(d.shard, d.log)
	if connect := d.o.Connect; connect != nil {
		// The config's named clusters are sharded as the command line's is:
		// a shard keeps its share of every cluster.
		d.o.Connect = func(spec config.ClusterSpec) (*dyninformer.Client, k8sdiscovery.DiscoveryInterface, error) {
			c, disc, err := connect(spec)
			if err != nil || c == nil {
				return c, disc, err
			}
			return c.WithShard(d.shard, d.log.With("cluster", spec.Name)), disc, nil
		}
	}
	d.metrics.SetShard(index, s.Count)
	d.log.Info("shard: this process keeps the objects of its share only", "shard", d.shard.String(), "selector", d.shard.Selector())
	return nil
}

// leaseName is the Lease of this process: leaderElection.name, and with
// shards "-INDEX", so that each shard elects its own leader among its
// replicas.
func (d *daemon) leaseName(name string) string {
	if d.o.File.Config.Shards == nil {
		return name
	}
	return fmt.Sprintf("%s-%d", name, d.shard.Index)
}

// shardSpec is what the state file keeps of the shard it was written under.
func (d *daemon) shardSpec() string {
	if !d.shard.Sharded() {
		return ""
	}
	return d.shard.String()
}

// reshardState compares the shard spec the state file was written under with
// this process's: on a change (shards.count, index or by), the records of
// objects now another shard's are dropped silently and objects new to the
// share are taken as a baseline (state.Store.Reshard).
func (d *daemon) reshardState(store *state.Store) error {
	r, err := store.Reshard(d.shardSpec(), d.shard.Owns)
	switch {
	case err != nil:
		return fmt.Errorf("reshard the state: %w", err)
	case r != nil && r.From != "":
		d.log.Warn("state: written under another shard spec; records of objects now another shard's dropped, objects new to this shard taken as a baseline (their changes while resharding do not fire)",
			"from", r.From, "to", orAll(r.To), "recordsDropped", r.Dropped)
	}
	return nil
}

func orAll(spec string) string {
	if spec == "" {
		return "everything (no shards)"
	}
	return spec
}

// readyShard is what /readyz adds to its body for a shard.
func (d *daemon) readyShard() string {
	if d.o.File.Config.Shards == nil {
		return ""
	}
	return "shard: " + d.shard.String() + "\n"
}

// closeState notes that this run of the state file ends now (what a later
// reshard compares creation times with, see state.Tx.ReshardedAfter) and
// closes it.
func closeState(store *state.Store) {
	_ = store.MarkStopped()
	store.Close()
}

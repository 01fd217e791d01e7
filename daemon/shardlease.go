package daemon

import (
	"context"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynwatch/dynwatch/state"
)

// The labels a shard's Lease carries (with leaderElection), so that a shard
// coming back to the set can tell that the set shrank past it while it was
// away: its state file then took no part in a shard-set change, and its
// records are stale (README, Scaling out).
const (
	// labelShardCount is the shards.count its holder runs under.
	labelShardCount = "dynwatch.io/shard-count"
	// labelShrunkAt is when (Unix seconds, the holder's clock) a holder
	// last started under a count smaller than the Lease's before, and
	// labelShrunkTo that count.
	labelShrunkAt = "dynwatch.io/shard-shrunk-at"
	labelShrunkTo = "dynwatch.io/shard-shrunk-to"
)

// shardLeaseLabels are the labels this shard writes on its Lease name while
// it holds it: its count, and the last shrink, which it notes when the Lease
// says a larger count than its own, and keeps otherwise. nil without shards.
func (d *daemon) shardLeaseLabels(ctx context.Context, namespace, name string) map[string]string {
	if d.o.File.Config.Shards == nil {
		return nil
	}
	out := map[string]string{labelShardCount: strconv.Itoa(d.shard.Count)}
	l, err := d.o.Kube.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return out // a new Lease (or none to read): no shrink to keep
	}
	prev, perr := strconv.Atoi(l.Labels[labelShardCount])
	switch {
	case perr == nil && prev > d.shard.Count:
		out[labelShrunkAt] = strconv.FormatInt(time.Now().Unix(), 10)
		out[labelShrunkTo] = strconv.Itoa(d.shard.Count)
	case l.Labels[labelShrunkAt] != "":
		out[labelShrunkAt], out[labelShrunkTo] = l.Labels[labelShrunkAt], l.Labels[labelShrunkTo]
	}
	return out
}

// forgetIfStale reads the other shards' Leases: one that says the set shrank
// to this shard's index or below after the state file was last written means
// this shard was scaled away and its file kept; the others have delivered,
// live, what its records would replay. The records are then dropped (the
// queues kept): this start is a first start's baseline. Without
// leaderElection there are no Leases, and nothing tells (the chart deletes a
// scaled-away shard's volume instead).
func (d *daemon) forgetIfStale(ctx context.Context, store *state.Store) error {
	le := d.o.File.Config.LeaderElection
	if le == nil || d.o.File.Config.Shards == nil || d.o.Kube == nil {
		return nil
	}
	last, ok := store.LastRun()
	if !ok {
		return nil
	}
	for i := range d.shard.Count {
		if i == d.shard.Index {
			continue
		}
		name := fmt.Sprintf("%s-%d", le.Name, i)
		l, err := d.o.Kube.CoordinationV1().Leases(le.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		at, err1 := strconv.ParseInt(l.Labels[labelShrunkAt], 10, 64)
		to, err2 := strconv.Atoi(l.Labels[labelShrunkTo])
		if err1 != nil || err2 != nil || to > d.shard.Index || at <= last.Unix() {
			continue
		}
		n, err := store.Forget()
		if err != nil {
			return fmt.Errorf("drop the stale records: %w", err)
		}
		d.log.Warn("state: the shard set shrank past this shard after its state file was last written (its file took no part in that change); records dropped, this start is a first start's baseline (changes while it was away do not replay from it)",
			"lease", le.Namespace+"/"+name, "shrunkTo", to, "shrunkAt", time.Unix(at, 0).UTC(), "fileLastWritten", last.UTC(), "recordsDropped", n)
		return nil
	}
	return nil
}

package daemon

import (
	"context"
	"fmt"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynwatch/dynwatch/state"
)

// The labels a shard's Lease carries (with leaderElection). They tell a
// shard coming back to the set that the set shrank past it while it was
// away (its state file then took no part in a shard-set change, and its
// records are stale), and they tell every shard after a reshard when each
// shard of the previous spec last ran (docs/scaling.md, "Resharding").
const (
	// labelShardCount and labelShardBy are the spec its holder runs under
	// (no labelShardBy: uid, as Leases written before it).
	labelShardCount = "dynwatch.io/shard-count"
	labelShardBy    = "dynwatch.io/shard-by"
	// labelShrunkAt is when (Unix seconds, the holder's clock) a holder
	// last started under a count smaller than the Lease's before, and
	// labelShrunkTo that count.
	labelShrunkAt = "dynwatch.io/shard-shrunk-at"
	labelShrunkTo = "dynwatch.io/shard-shrunk-to"
	// labelPrevCount and labelPrevBy are the spec the Lease showed before
	// the one its holder runs under, and labelPrevEnded when that spec's
	// holder last renewed it (Unix seconds, its renewTime): when that shard
	// of the previous spec stopped.
	labelPrevCount = "dynwatch.io/shard-prev-count"
	labelPrevBy    = "dynwatch.io/shard-prev-by"
	labelPrevEnded = "dynwatch.io/shard-prev-ended"
	// labelPrevRV is the resourceVersion of the Lease as that spec's holder
	// last wrote it: a new shard's listing counts for the records set aside
	// only if it came later (listedAfter), also for a process of this spec
	// killed before it kept that in its file.
	labelPrevRV = "dynwatch.io/shard-prev-rv"
)

// shardLeaseLabels are the labels this shard writes on its Lease name while
// it holds it (nil without shards), from the Lease as it is before this
// process first writes it, which it keeps (d.ownLease, for newToSet).
func (d *daemon) shardLeaseLabels(ctx context.Context, namespace, name string) map[string]string {
	if d.o.File.Config.Shards == nil {
		return nil
	}
	l, err := d.o.Kube.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		l = nil // a new Lease (or none to read): nothing to keep
	}
	d.ownLease = l
	d.prevMarks = prevMarksOf(l, d.specNow())
	return nextLeaseLabels(l, d.specNow(), time.Now())
}

// nextLeaseLabels are the labels of the holder of Lease l (nil: none yet)
// under spec cur: its spec; when l shows another one (the shard's previous
// spec, whose holder stopped), that spec and when it ended, l's renewTime;
// else the previous spec l keeps. And the last shrink, noted at now when l
// says a larger count, else kept. A Lease read before or after its holder
// rewrote it thus says the same of the previous spec (leasePast).
func nextLeaseLabels(l *coordinationv1.Lease, cur state.MovedFrom, now time.Time) map[string]string {
	out := map[string]string{labelShardCount: strconv.Itoa(cur.Count), labelShardBy: byLabel(cur.ByNamespace)}
	if l == nil {
		return out
	}
	was, ok := leaseSpec(l.Labels, labelShardCount, labelShardBy)
	switch {
	case ok && !sameSpec(was, cur):
		out[labelPrevCount], out[labelPrevBy] = l.Labels[labelShardCount], byLabel(was.ByNamespace)
		if l.Spec.RenewTime != nil {
			out[labelPrevEnded] = strconv.FormatInt(l.Spec.RenewTime.Unix(), 10)
		}
		if l.ResourceVersion != "" {
			out[labelPrevRV] = l.ResourceVersion
		}
	case ok:
		for _, k := range []string{labelPrevCount, labelPrevBy, labelPrevEnded, labelPrevRV} {
			if v, kept := l.Labels[k]; kept {
				out[k] = v
			}
		}
	}
	switch {
	case ok && was.Count > cur.Count:
		out[labelShrunkAt] = strconv.FormatInt(now.Unix(), 10)
		out[labelShrunkTo] = strconv.Itoa(cur.Count)
	case l.Labels[labelShrunkAt] != "":
		out[labelShrunkAt], out[labelShrunkTo] = l.Labels[labelShrunkAt], l.Labels[labelShrunkTo]
	}
	return out
}

// leaseSpec reads a spec off a Lease's labels (count and by under the keys
// given); ok is false when they have none.
func leaseSpec(labels map[string]string, countKey, byKey string) (state.MovedFrom, bool) {
	n, err := strconv.Atoi(labels[countKey])
	if err != nil || n < 1 {
		return state.MovedFrom{}, false
	}
	return state.MovedFrom{Count: n, ByNamespace: labels[byKey] == "namespace"}, true
}

func sameSpec(a, b state.MovedFrom) bool { return a.Count == b.Count && a.ByNamespace == b.ByNamespace }

func byLabel(byNamespace bool) string {
	if byNamespace {
		return "namespace"
	}
	return "uid"
}

// forgetIfStale reads the other shards' Leases: one that says the set shrank
// to this shard's index or below after the state file was last written means
// this shard was scaled away and its file kept; the others have delivered,
// live, what its records would replay. The records are then dropped (the
// queues kept): this start is a first start's baseline. Without
// leaderElection there are no Leases, and nothing tells (the chart deletes a
// scaled-away shard's volume instead). It reports whether it dropped them.
func (d *daemon) forgetIfStale(ctx context.Context, store *state.Store) (bool, error) {
	le := d.o.File.Config.LeaderElection
	if le == nil || d.o.File.Config.Shards == nil || d.o.Kube == nil {
		return false, nil
	}
	last, ok := store.LastRun()
	if !ok {
		return false, nil
	}
	name, to, at, shrunk := d.shrunkPast(ctx, last)
	if !shrunk {
		return false, nil
	}
	n, err := store.Forget()
	if err != nil {
		return false, fmt.Errorf("drop the stale records: %w", err)
	}
	d.log.Warn("state: the shard set shrank past this shard after its state file was last written (its file took no part in that change); records dropped; this start is a new shard's (with leaderElection, objects are compared with when their shard under the previous spec stopped; without, a first start's baseline)",
		"lease", le.Namespace+"/"+name, "shrunkTo", to, "shrunkAt", at.UTC(), "fileLastWritten", last.UTC(), "recordsDropped", n)
	return true, nil
}

// shrunkPast finds, on another shard's Lease, a shrink of the set to this
// shard's index or below after since: the Lease's name, the count, when.
func (d *daemon) shrunkPast(ctx context.Context, since time.Time) (name string, to int, at time.Time, ok bool) {
	le := d.o.File.Config.LeaderElection
	for i := range d.shard.Count {
		if i == d.shard.Index {
			continue
		}
		name = fmt.Sprintf("%s-%d", le.Name, i)
		l, err := d.o.Kube.CoordinationV1().Leases(le.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		sec, err1 := strconv.ParseInt(l.Labels[labelShrunkAt], 10, 64)
		to, err2 := strconv.Atoi(l.Labels[labelShrunkTo])
		if err1 != nil || err2 != nil || to > d.shard.Index || sec <= since.Unix() {
			continue
		}
		return name, to, time.Unix(sec, 0), true
	}
	return "", 0, time.Time{}, false
}

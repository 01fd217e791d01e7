package daemon

import (
	"context"
	"fmt"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynwatch/dynwatch/state"
)

// shardState brings a state file just opened to this shard: a reshard
// (reshardState), a file the set outgrew (forgetIfStale), the objects that
// moved away and were deleted meanwhile (settleMovedAway), and, with
// leaderElection, what the shards' Leases say of the previous spec's ends
// (noteMovedFrom). ctx is the Lease's (nil without leader election).
func (d *daemon) shardState(ctx context.Context, store *state.Store) error {
	_, ran := store.LastRun()
	r, err := d.reshardState(store)
	if err != nil {
		return err
	}
	forgot, err := d.forgetIfStale(ctx, store)
	if err != nil {
		return err
	}
	if err := d.settleMovedAway(ctx, store); err != nil {
		return err
	}
	return d.noteMovedFrom(ctx, store, r, ran && !forgot)
}

// specNow is this shard's spec, as the Leases carry it.
func (d *daemon) specNow() state.MovedFrom {
	return state.MovedFrom{Count: d.shard.Count, ByNamespace: d.shard.ByNamespace}
}

// noteMovedFrom keeps in the file, once per reshard, when each shard of the
// previous spec last ran, as their Leases say (leasePast): an object that
// moved in is compared with its old owner's end (watcher, reshard.go). A
// file that ran before knows the previous spec (r, when it changed); a new
// file (or one forgotten) is a shard new to the set when its own Lease did
// not show this spec before this process took it (newToSet), and reads the
// previous spec off the others' Leases. Without leaderElection there are no
// Leases: a file that ran compares with its own end, a new one with nothing.
func (d *daemon) noteMovedFrom(ctx context.Context, store *state.Store, r *state.Resharded, ran bool) error {
	le := d.o.File.Config.LeaderElection
	if le == nil || d.o.File.Config.Shards == nil || d.o.Kube == nil {
		return nil
	}
	var (
		prev     state.MovedFrom
		own      = -1 // this shard's index under prev: its own file's end stands for it
		newShard bool
	)
	switch {
	case ran && r == nil:
		from, due := store.MovedFromDue()
		if !due {
			return nil // no reshard: what the last one kept stays
		}
		prev, own = parseSpec(from) // killed mid-reshard: keep it now
	case ran:
		prev, own = parseSpec(r.From)
	case d.newToSet(ctx):
		var ok bool
		if prev, ok = d.previousSpec(ctx); !ok {
			return nil // no shard ran before: a first start
		}
		newShard = true
	default:
		return nil
	}
	var unknown []int
	for i := range prev.Count {
		if i == own {
			continue
		}
		if at, marks, ok := d.peerPast(ctx, prev, i); ok {
			prev.SetEnd(i, at)
			if marks != nil {
				prev.SetMarks(i, marks)
			}
		} else {
			unknown = append(unknown, i)
		}
	}
	var clusters []string // each cluster's source adopts its first watches
	for _, c := range d.o.File.Config.Clusters {
		clusters = append(clusters, c.Name)
	}
	if err := store.SetMovedFrom(prev, newShard, clusters...); err != nil {
		return fmt.Errorf("keep the previous shard spec: %w", err)
	}
	d.log.Info("state: resharded; objects that moved in are compared with when their shard under the previous spec stopped, as its Lease says",
		"previousCount", prev.Count, "ends", prev.Ends, "newShard", newShard)
	if len(unknown) > 0 {
		d.log.Warn("state: no Lease says when these shards of the previous spec stopped; objects that moved in from them are compared with this file's own end (a new shard's: none, they fire nothing)",
			"previousCount", prev.Count, "shards", unknown)
	}
	return nil
}

// parseSpec reads a spec the state file kept (dyninformer.Shard.String,
// "1/3 by uid"; "" is no shards), with its index.
func parseSpec(s string) (state.MovedFrom, int) {
	var index, count int
	var by string
	if _, err := fmt.Sscanf(s, "%d/%d by %s", &index, &count, &by); err != nil || count < 1 {
		return state.MovedFrom{Count: 1}, 0
	}
	return state.MovedFrom{Count: count, ByNamespace: by == "namespace"}, index
}

// newToSet reports whether this shard had no part in the spec it runs under
// before: its Lease, as elect first read it, did not exist, showed another
// spec or a holder that had not brought its file to it (labelJoining), or
// the set shrank past it after that Lease was last renewed.
func (d *daemon) newToSet(ctx context.Context) bool {
	l := d.ownLease
	if l == nil || l.Labels[labelJoining] == "1" { // none, or its holder was killed as it joined
		return true
	}
	if was, ok := leaseSpec(l.Labels, labelShardCount, labelShardBy); !ok || !sameSpec(was, d.specNow()) {
		return true
	}
	if l.Spec.RenewTime == nil {
		return true
	}
	_, _, _, shrunk := d.shrunkPast(ctx, l.Spec.RenewTime.Time)
	return shrunk
}

// previousSpec reads the spec before this one off the other shards'
// Leases: one that still shows another spec (its shard has not started
// under this one yet), or this one with the previous it keeps. A set that
// had no shards shows its Lease, leaderElection.name, without labels.
func (d *daemon) previousSpec(ctx context.Context) (state.MovedFrom, bool) {
	for i := range d.shard.Count {
		if i == d.shard.Index {
			continue
		}
		l, ok := d.lease(ctx, d.leaseOf(i))
		if !ok {
			continue
		}
		if s, ok := leaseSpec(l.Labels, labelShardCount, labelShardBy); ok && !sameSpec(s, d.specNow()) {
			return s, true
		}
		if s, ok := leaseSpec(l.Labels, labelPrevCount, labelPrevBy); ok {
			return s, true
		}
	}
	if _, ok := d.lease(ctx, d.o.File.Config.LeaderElection.Name); ok {
		return state.MovedFrom{Count: 1}, true
	}
	return state.MovedFrom{}, false
}

// peerPast is what the Lease of shard index of spec prev says of it: when
// it last ran, and the marks it published then (nil: none).
func (d *daemon) peerPast(ctx context.Context, prev state.MovedFrom, index int) (time.Time, map[string]string, bool) {
	plain := prev.Count <= 1
	if l, ok := d.lease(ctx, d.leaseOf(index)); ok {
		if at, marks, ok := leasePast(l, prev, false); ok {
			return at, marks, true
		}
	}
	if !plain {
		return time.Time{}, nil, false
	}
	l, ok := d.lease(ctx, d.o.File.Config.LeaderElection.Name) // no shards block: one Lease
	if !ok {
		return time.Time{}, nil, false
	}
	return leasePast(l, prev, true)
}

// leasePast is what Lease l says of its holder under spec prev: when it
// stopped, and the marks it published (annMarks; nil: none). l still shows
// prev (plain: it is the Lease of a process without shards, which writes no
// labels), and its holder ran until its renewTime (a holder that stops
// releases the Lease, which renews it then); or l shows the spec that
// followed, whose holder kept prev's renewTime and marks on it as it took l
// over (nextLeaseLabels, prevMarksOf). Either way the same, whether the
// next holder rewrote l before or after it was read. ok false: l says
// nothing of prev.
func leasePast(l *coordinationv1.Lease, prev state.MovedFrom, plain bool) (time.Time, map[string]string, bool) {
	s, shows := leaseSpec(l.Labels, labelShardCount, labelShardBy)
	switch {
	case (plain && !shows) || (shows && sameSpec(s, prev)):
		if l.Spec.RenewTime == nil {
			return time.Time{}, nil, false
		}
		return time.Unix(l.Spec.RenewTime.Unix(), 0), stringMap(l.Annotations[annMarks]), true
	case !shows:
		return time.Time{}, nil, false
	}
	p, ok := leaseSpec(l.Labels, labelPrevCount, labelPrevBy)
	sec, err := strconv.ParseInt(l.Labels[labelPrevEnded], 10, 64)
	if !ok || err != nil || !sameSpec(p, prev) {
		return time.Time{}, nil, false
	}
	return time.Unix(sec, 0), stringMap(l.Annotations[annPrevMarks]), true
}

// leaseOf names the Lease of shard index (under any spec with shards).
func (d *daemon) leaseOf(index int) string {
	return fmt.Sprintf("%s-%d", d.o.File.Config.LeaderElection.Name, index)
}

// lease reads a Lease of the leader election's namespace; ok is false when
// it cannot (none, or RBAC grants no get on it: the chart and dynwatch rbac
// grant get on every Lease of the namespace with shards, but RBAC written by
// hand may name the current count's Leases only).
func (d *daemon) lease(ctx context.Context, name string) (*coordinationv1.Lease, bool) {
	ns := d.o.File.Config.LeaderElection.Namespace
	l, err := d.o.Kube.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsForbidden(err) {
		// Not silent: what that Lease would say is then unknown (a shard of
		// a larger set before a shrink, or the Lease of before shards).
		d.log.Warn("shard: cannot read a Lease of the shard set (forbidden): a reshard compares with this shard's own end instead, and a change made while the set was down may be lost; grant get on it (dynwatch rbac grants get on every Lease of the namespace)",
			"lease", ns+"/"+name, "err", err)
	}
	return l, err == nil
}

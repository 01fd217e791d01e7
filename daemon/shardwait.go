package daemon

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/state"
)

// settleWait bounds how long settleMovedAway waits for the shards that the
// records set aside moved to to say they have listed (awaitListed).
const settleWait = 3 * time.Minute

// awaitListed waits, with leaderElection, until each shard of this spec
// that a record set aside now belongs to says on its Lease that it has
// listed (labelListed: in its holder's term, or, if it does not run,
// after this shard's Lease was last written under the spec the records
// were recorded under, listedAfter: a Lease left by an earlier set of this
// spec says it listed long before), polling, and
// returns the resourceVersion each gave (labelListedRV), by index. It waits
// settleWait for a shard that is not running, and as long as one runs (its
// Lease held and renewed: it may be waiting itself, for a shard above it;
// waits down a chain of shards run side by side, so the chain takes about
// the one settleWait of its last shard, and its lists), up to twice
// settleWait in all (one that runs and never lists: a cluster it cannot
// reach, which keeps its watcher from saying it listed). One that does not say so in
// time is left out, saying so: its records are settled with lists made now,
// and an object of them deleted before it lists is in no file. The end of
// ctx (the Lease's, or a shutdown) ends the wait (errLeaseEnded: the
// records stay set aside).
//
// A shard waits only for shards of higher index than its own when the set
// grows (or keeps its count: by changed), of lower when it shrinks, so that
// no two shards wait for each other (each waits before it lists). When the
// count changes, every object that moves does so that way (the ranges
// split the hash space in order); when by changes, those that move the
// other way are settled with lists made now.
func (d *daemon) awaitListed(ctx context.Context, store *state.Store, prev state.MovedFrom, away map[state.Resource][]state.MovedAway) (map[int]listing, error) {
	if d.o.File.Config.LeaderElection == nil || d.o.Kube == nil {
		return nil, nil
	}
	owners := map[int]bool{}
	for _, recs := range away {
		for _, r := range recs {
			if k := d.ownerNow(r); waitsFor(prev.Count, d.shard.Count, d.shard.Index, k) {
				owners[k] = true
			}
		}
	}
	if len(owners) == 0 {
		return nil, nil
	}
	after, err := d.listedAfter(store)
	if err != nil {
		return nil, err
	}
	wait := d.settleWait
	if wait == 0 {
		wait = settleWait
	}
	start := time.Now()
	longest := start.Add(2 * wait)
	deadline := map[int]time.Time{}
	seen := map[int]observed{}
	at := map[int]listing{}
	for said := false; ; said = true {
		var waiting []int
		now := time.Now()
		for k := range owners {
			if _, ok := at[k]; ok {
				continue
			}
			lease, _ := d.lease(ctx, d.leaseOf(k))
			running := seen[k].running(lease, now)
			seen[k] = seen[k].next(lease, now)
			l, ok := listingOf(lease, d.specNow(), after, running)
			switch {
			case ok:
				at[k] = l
				continue
			case running:
				deadline[k] = now.Add(wait) // it renews: wait on
			case deadline[k].IsZero():
				deadline[k] = start.Add(wait)
			}
			if now.Before(deadline[k]) && now.Before(longest) {
				waiting = append(waiting, k)
			}
		}
		slices.Sort(waiting)
		if len(waiting) == 0 {
			var late []int
			for k := range owners {
				if _, ok := at[k]; !ok {
					late = append(late, k)
				}
			}
			if len(late) > 0 {
				slices.Sort(late)
				d.log.Warn("state: these shards did not say they listed in time; the objects that moved to them are settled as they are now, and one deleted before its shard lists is not delivered as deleted",
					"shards", late, "waited", time.Since(start).Round(time.Second).String())
			}
			return at, nil
		}
		if !said {
			d.log.Info("state: waiting for the shards that objects moved to to list, so that an object deleted meanwhile is delivered as deleted", "shards", waiting, "atMost", wait.String())
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for the shards that objects moved to: %w", errLeaseEnded)
		case <-time.After(time.Second):
		}
	}
}

// listedAfter is the resourceVersion after which a new shard's listing
// counts for the records set aside: that of this shard's Lease as its
// holder under the spec the records were recorded under wrote it last (the
// Lease before this process wrote it, or, if a process of this spec wrote
// it since, labelPrevRV), kept in the file the first time (a process
// killed while it settles sees its own Lease at its next start); "none"
// when this process read none (none, or it could not read it): a Lease that
// does not run then never counts.
func (d *daemon) listedAfter(store *state.Store) (string, error) {
	if rv, ok := store.ListedAfter(); ok {
		return rv, nil
	}
	rv := "none"
	if l := d.ownLease; l != nil {
		rv = l.ResourceVersion
		if s, ok := leaseSpec(l.Labels, labelShardCount, labelShardBy); ok && sameSpec(s, d.specNow()) {
			// A process of this spec wrote it already (killed before it
			// kept this in the file): the old spec's last write is kept.
			rv = l.Labels[labelPrevRV]
			if rv == "" {
				rv = "none"
			}
		}
	}
	if err := store.SetListedAfter(rv); err != nil {
		return "", fmt.Errorf("keep the records set aside: %w", err)
	}
	return rv, nil
}

// waitsFor reports whether shard index of count, resharded from prevCount,
// waits for shard k to list (awaitListed): higher ones when the set grows or
// keeps its count, lower when it shrinks.
func waitsFor(prevCount, count, index, k int) bool {
	if prevCount > count {
		return k < index
	}
	return k > index
}

// ownerNow is the index of the shard of this spec that holds r's object.
func (d *daemon) ownerNow(r state.MovedAway) int {
	return dyninformer.ShardOf(d.shard.Count, d.shard.ByNamespace, r.UID, r.Namespace)
}

// listing is what a shard's Lease says of its listing in its holder's
// term: the resourceVersion of the Lease write that first said it listed
// (labelListedRV, later than all its lists, in the cluster the Leases live
// in), and each watch's first list's, by scope (annListed).
type listing struct {
	rv     string
	scopes map[string]string
}

// at is the resourceVersion at which a list of res's objects in namespace
// ns holds what the shard's list of them held: its watch's of the scope
// that covers ns, else, in the cluster the Leases live in, the Lease
// write's (an object deleted between the shard's list and that write is
// then delivered as deleted twice). "": none known (list now).
func (l listing) at(res state.Resource, ns string) string {
	for _, s := range []state.Scope{res.In(ns), res.In("")} {
		if rv, ok := l.scopes[s.String()]; ok {
			return rv
		}
	}
	if res.Cluster == "" {
		return l.rv
	}
	return ""
}

// observed is what was seen of a shard's Lease: its holder's last renewal
// (renewal), and when that was last seen to change, by this process's
// clock (zero: not yet seen to change). As client-go's elector judges a
// Lease, a holder is running when it is seen renewing it, whatever the
// clocks say; a Lease seen once says nothing yet (a holder killed long ago
// leaves its name on it), and a write that renews nothing (an annotation,
// a label) is no renewal.
type observed struct {
	renewal string
	at      time.Time
}

// renewal is what a holder's renewal of Lease l changes: the holder, and
// its renewTime ("": none held).
func renewal(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil {
		return ""
	}
	return *l.Spec.HolderIdentity + "@" + l.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
}

// running reports whether Lease l, seen before as o says, is held by a
// holder that renews it: held, and seen renewed (by this poll, or within
// its leaseDuration before now).
func (o observed) running(l *coordinationv1.Lease, now time.Time) bool {
	r := renewal(l)
	if r == "" || l.Spec.LeaseDurationSeconds == nil {
		return false
	}
	renewed := o.renewal != "" && r != o.renewal
	return renewed || (!o.at.IsZero() && now.Sub(o.at) < time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second)
}

// next is what is seen of the shard's Lease once l is read at now.
func (o observed) next(l *coordinationv1.Lease, now time.Time) observed {
	r := renewal(l)
	switch {
	case r == "" || r == o.renewal:
		return o
	case o.renewal == "":
		return observed{renewal: r} // seen once: not seen renewed
	}
	return observed{renewal: r, at: now}
}

// listingOf is how the holder of shard Lease l listed under spec cur, as l
// says; ok is false when it does not say it listed under cur, in its
// holder's term if l is running (a holder says it has not listed from its
// takeover on), else after after (a resourceVersion; "": any; not a
// number: never): a Lease left by an earlier set of this spec says it
// listed then.
func listingOf(l *coordinationv1.Lease, cur state.MovedFrom, after string, running bool) (listing, bool) {
	if l == nil {
		return listing{}, false
	}
	s, shows := leaseSpec(l.Labels, labelShardCount, labelShardBy)
	rv := l.Labels[labelListedRV]
	if !shows || !sameSpec(s, cur) || l.Labels[labelListed] != "1" || rv == "" || (!running && !laterRV(rv, after)) {
		return listing{}, false
	}
	return listing{rv: rv, scopes: stringMap(l.Annotations[annListed])}, true
}

// laterRV reports whether resourceVersion rv is later than after ("":
// any); resourceVersions that are not numbers cannot be compared, and are
// not.
func laterRV(rv, after string) bool {
	if after == "" {
		return true
	}
	a, err1 := strconv.ParseUint(after, 10, 64)
	r, err2 := strconv.ParseUint(rv, 10, 64)
	return err1 == nil && err2 == nil && r > a
}

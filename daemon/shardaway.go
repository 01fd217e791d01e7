package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sdiscovery "k8s.io/client-go/discovery"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/state"
)

// settleTimeout bounds the lists settleMovedAway makes.
const settleTimeout = 2 * time.Minute

// settleWait bounds how long settleMovedAway waits for the shards that the
// records set aside moved to to say they have listed (awaitListed).
const settleWait = 3 * time.Minute

// settleMovedAway asks the API server which objects a reshard moved away
// from this shard still exist (state.Store.MovedAway): it lists their old
// share (this shard's range under the spec they were recorded under: where
// the server filters, it sends that share only) in each namespace scope
// their resource was watched in. A record whose object the lists did not
// hold goes back among the records, so that its delete replays from this
// shard, which had it; the others are dropped: their new shard had them.
//
// With leaderElection it first waits for those new shards to have listed
// (awaitListed), and asks which objects existed when they had: an object
// deleted after this shard's list but before its new shard's would
// otherwise be in no file. Records of the cluster the Leases live in are
// listed as they were at the resourceVersion the new shard gave (a delete
// after it is the new shard's to deliver, not this one's); those of a named
// cluster as they are now (a delete after the new shard listed may then be
// delivered by both). Without leaderElection there are no Leases: the lists
// are made now.
//
// Records of a named cluster are listed in that cluster. What cannot be
// listed (a cluster that cannot be reached, a list that fails) is dropped
// as before, saying so: those deletes do not replay; but a wait or a list
// cut short by the end of the Lease leaves what is still set aside for the
// next leader (errLeaseEnded).
func (d *daemon) settleMovedAway(ctx context.Context, store *state.Store) error {
	from, away, err := store.MovedAway()
	if err != nil || len(away) == 0 {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	lease := ctx
	prev, index := parseSpec(from)
	at, err := d.awaitListed(lease, store, prev, away)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	old := dyninformer.NewShard(prev.Count, index, prev.ByNamespace)
	var replayed int
	clients := map[string]clusterClient{} // each cluster's, connected once
	for res, recs := range away {
		gone, err := d.goneIn(ctx, old, clients, store, res, recs, at)
		if err != nil && lease.Err() != nil {
			// The Lease ended (or the process stops): what is left set
			// aside stays for the next leader to settle.
			return fmt.Errorf("list the objects that moved away: %w", errLeaseEnded)
		}
		if err != nil {
			d.log.Warn("state: cannot tell which objects that moved to another shard were deleted while the set was stopped; their records are dropped (those deletes do not replay)",
				"resource", res.String(), "records", len(recs), "err", err)
			gone = nil
		}
		if err := store.SettleMovedAway(res, gone); err != nil {
			return fmt.Errorf("settle the records of objects that moved away: %w", err)
		}
		replayed += len(gone)
	}
	d.log.Info("state: objects that moved to another shard settled; those deleted before their new shard listed replay their delete from this shard", "deleted", replayed)
	return store.DropMovedAway()
}

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
// counts for the records set aside: that of this shard's Lease as it was
// before this process wrote it (its holder under the spec the records were
// recorded under wrote it last), kept in the file the first time (a process
// killed while it settles sees its own Lease at its next start). "": any.
func (d *daemon) listedAfter(store *state.Store) (string, error) {
	if rv, ok := store.ListedAfter(); ok {
		return rv, nil
	}
	rv := "none" // no Lease read: a Lease that does not run never counts
	if d.ownLease != nil {
		rv = d.ownLease.ResourceVersion
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
	for k := range d.shard.Count {
		if dyninformer.NewShard(d.shard.Count, k, d.shard.ByNamespace).Owns(r.UID, r.Namespace) {
			return k
		}
	}
	return 0
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
	return listing{rv: rv, scopes: parseMarks(l.Annotations[annListed])}, true
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

// clusterClient is a cluster's clients (or why there are none), as
// clusterClients made them: old's share, and discovery.
type clusterClient struct {
	client *dyninformer.Client
	disc   k8sdiscovery.DiscoveryInterface
	err    error
}

// goneIn lists res in its cluster, old's share of it, with gone; clients
// keeps each cluster's clients for the next resource of the same cluster.
// at is awaitListed's: it counts for the cluster the Leases live in only
// (a named cluster's resourceVersions are its own).
func (d *daemon) goneIn(ctx context.Context, old dyninformer.Shard, clients map[string]clusterClient, store *state.Store, res state.Resource, recs []state.MovedAway, at map[int]listing) ([]string, error) {
	c, ok := clients[res.Cluster]
	if !ok {
		client, disc, err := d.clusterClients(res.Cluster)
		if err == nil {
			client = client.Unsharded().WithShard(old, d.log)
		}
		c = clusterClient{client: client, disc: disc, err: err}
		clients[res.Cluster] = c
	}
	if c.err != nil {
		return nil, c.err
	}
	return d.gone(ctx, c.client, c.disc, store, res, recs, at)
}

// clusterClients are the clients of the cluster named name: the command
// line's for "" (no clusters), else the config's cluster of that name,
// connected anew.
func (d *daemon) clusterClients(name string) (*dyninformer.Client, k8sdiscovery.DiscoveryInterface, error) {
	if name == "" {
		if d.o.Informers == nil || d.o.Discovery == nil {
			return nil, nil, errors.New("no clients of the cluster")
		}
		return d.o.Informers, d.o.Discovery, nil
	}
	for _, c := range d.o.File.Config.Clusters {
		if c.Name == name && d.o.Connect != nil {
			client, disc, err := d.o.Connect(c)
			if err != nil {
				return nil, nil, fmt.Errorf("cluster %s: %w", name, err)
			}
			return client, disc, nil
		}
	}
	return nil, nil, fmt.Errorf("cluster %q is not one the config names", name)
}

// gone lists res in each namespace scope it has a baseline in and returns
// the uids of recs in those scopes that no list held (none listed: an
// error, nothing can be told). The records of a shard that at gives a
// resourceVersion for are looked for as the objects were then; the others
// (and those, when the API server no longer has that resourceVersion) as
// they are now.
func (d *daemon) gone(ctx context.Context, client *dyninformer.Client, disc k8sdiscovery.DiscoveryInterface, store *state.Store, res state.Resource, recs []state.MovedAway, at map[int]listing) ([]string, error) {
	gvr, err := preferred(disc, res)
	if err != nil {
		return nil, err
	}
	scopes := store.Namespaces(res)
	if len(scopes) == 0 {
		return nil, fmt.Errorf("%s was never listed in full", res.String())
	}
	byRV := map[string][]state.MovedAway{} // "": now
	for _, r := range recs {
		rv := at[d.ownerNow(r)].at(res, r.Namespace)
		byRV[rv] = append(byRV[rv], r)
	}
	var gone []string
	for rv, recs := range byRV {
		exists, err := uidsAt(ctx, client, gvr, scopes, rv)
		if err != nil && rv != "" && ctx.Err() == nil {
			d.log.Warn("state: cannot list the objects that moved away as they were when their new shard listed; listing them as they are now (one deleted after that shard listed may be delivered as deleted twice)",
				"resource", res.String(), "resourceVersion", rv, "err", err)
			exists, err = uidsAt(ctx, client, gvr, scopes, "")
		}
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if !exists[r.UID] && slices.ContainsFunc(scopes, func(ns string) bool { return res.In(ns).Covers(r.Namespace) }) {
				gone = append(gone, r.UID)
			}
		}
	}
	return gone, nil
}

// uidsAt lists gvr in each namespace scope, as it was at resourceVersion rv
// ("": now), and returns the uids listed.
func uidsAt(ctx context.Context, client *dyninformer.Client, gvr schema.GroupVersionResource, scopes []string, rv string) (map[string]bool, error) {
	exists := map[string]bool{}
	for _, ns := range scopes {
		opts := metav1.ListOptions{Limit: 500}
		if rv != "" {
			opts.ResourceVersion, opts.ResourceVersionMatch = rv, metav1.ResourceVersionMatchExact
		}
		for {
			l, err := client.List(ctx, gvr, ns, opts)
			if err != nil { // once more: a server that refused the selector is filtered on the client now
				l, err = client.List(ctx, gvr, ns, opts)
			}
			if err != nil {
				return nil, fmt.Errorf("list %s in %q: %w", gvr, ns, err)
			}
			for _, o := range l.Items {
				if obj, ok := o.(*dyninformer.Object); ok {
					exists[string(obj.GetUID())] = true
				}
			}
			if opts.Continue = l.Continue; opts.Continue == "" {
				break
			}
			// The continued pages are of the first one's resourceVersion.
			opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
		}
	}
	return exists, nil
}

// preferred is the version of res's group the API server prefers.
func preferred(disc k8sdiscovery.DiscoveryInterface, res state.Resource) (schema.GroupVersionResource, error) {
	if res.Group == "" {
		return schema.GroupVersionResource{Version: "v1", Resource: res.Resource}, nil
	}
	groups, err := disc.ServerGroups()
	if err != nil {
		return schema.GroupVersionResource{}, fmt.Errorf("discovery: %w", err)
	}
	for _, g := range groups.Groups {
		if g.Name == res.Group {
			return schema.GroupVersionResource{Group: g.Name, Version: g.PreferredVersion.Version, Resource: res.Resource}, nil
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("group %s is not served", res.Group)
}

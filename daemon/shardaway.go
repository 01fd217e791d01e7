package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sdiscovery "k8s.io/client-go/discovery"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/state"
)

// settleTimeout bounds the lists settleMovedAway makes.
const settleTimeout = 2 * time.Minute

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

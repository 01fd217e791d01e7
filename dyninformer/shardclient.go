package dyninformer

import (
	"context"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// WithShard returns a client that lists and watches only shard's objects
// (the client's own, unsharded, stays as it is: the CRD watch, audit and tail
// use it). Where the server filters by shardSelector (the ShardedListAndWatch
// feature) it does so; elsewhere every object comes and the client drops the
// others' before anything is cached. Every list carries the selector: its
// answer (metadata.shardInfo echoes a selector the server applied) is how
// the client finds out, per API group and version, and again at every relist,
// so a server restarted with the feature turned on or off is followed. A
// watch carries it only where the last list said the server filters; a
// watch-list (sendInitialEvents), which is a relist without a list, asks
// first with a one-object list.
// log (default slog.Default()) says once per group/version which filters.
func (c *Client) WithShard(s Shard, log *slog.Logger) *Client {
	if !s.Sharded() {
		return c
	}
	if log == nil {
		log = slog.Default()
	}
	return &Client{rest: c.rest, shard: s, server: &serverSharding{filters: map[string]bool{}, log: log}}
}

// Shard returns the client's shard; Sharded() is false for a client of
// everything.
func (c *Client) Shard() Shard { return c.shard }

// ServerFilters reports, per group/version listed so far, whether the
// server filtered the shard's lists itself.
func (c *Client) ServerFilters() map[string]bool {
	if c.server == nil {
		return nil
	}
	c.server.mu.Lock()
	defer c.server.mu.Unlock()
	out := make(map[string]bool, len(c.server.filters))
	for k, v := range c.server.filters {
		out[k] = v
	}
	return out
}

// shardList is List's hook: the selector on, the answer noted, and the
// items of other shards dropped.
func (c *Client) shardList(gvr schema.GroupVersionResource, opts *metav1.ListOptions) func(*List) {
	if !c.shard.Sharded() {
		return nil
	}
	gv := gvr.GroupVersion().String()
	if !c.server.isRefused(gv) {
		opts.ShardSelector = c.shard.Selector()
	}
	return func(l *List) {
		// Any shardInfo says the server applied the selector: it may write
		// the selector back in another (equivalent) form.
		filters := opts.ShardSelector != "" && l.ShardInfo != nil
		if c.server.set(gv, filters) {
			how := "on the client"
			if filters {
				how = "by the server"
			}
			c.server.log.Info("shard: objects of other shards are dropped "+how, "groupVersion", gv, "shard", c.shard.String())
		}
		l.Items = c.keep(l.Items)
	}
}

// keep drops, in place, the items of other shards.
func (c *Client) keep(items []runtime.Object) []runtime.Object {
	out := items[:0]
	for _, it := range items {
		if c.shard.matches(it) {
			out = append(out, it)
		}
	}
	clear(items[len(out):])
	return out
}

// shardWatch is Watch's hook before the request: the selector on where the
// server filters (asked first for a watch-list).
func (c *Client) shardWatch(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts *metav1.ListOptions) {
	if !c.shard.Sharded() {
		return
	}
	gv := gvr.GroupVersion().String()
	filters, known := c.server.get(gv)
	if !known || (opts.SendInitialEvents != nil && *opts.SendInitialEvents) {
		// One object is enough: the answer's shardInfo says.
		if _, err := c.List(ctx, gvr, ns, metav1.ListOptions{Limit: 1}); err == nil {
			filters, _ = c.server.get(gv)
		}
	}
	if filters {
		opts.ShardSelector = c.shard.Selector()
	}
}

// filterWatch drops the events of other shards' objects (bookmarks and
// errors pass), before the informer sees them.
func (c *Client) filterWatch(w watch.Interface) watch.Interface {
	if !c.shard.Sharded() {
		return w
	}
	return newShardFilterWatch(w, func(ev watch.Event) bool {
		o, ok := ev.Object.(*Object)
		if !ok || ev.Type == watch.Bookmark {
			return true
		}
		return c.shard.matches(o)
	})
}

// Unsharded returns the client of everything that c shards (c itself when it
// does not): what every shard watches whole, the CRDs.
func (c *Client) Unsharded() *Client {
	if c == nil || !c.shard.Sharded() {
		return c
	}
	return &Client{rest: c.rest}
}

// shardRefused is List's hook after an error: a 400 to a list that carried
// the selector (a server whose validation of shardSelector differs: an
// aggregated API server on another apiserver library, a syntax it does not
// take) means the server will not filter this group/version. The client
// filters from then on, for the life of the process, and says so once;
// opts loses the selector and the caller retries once.
func (c *Client) shardRefused(gvr schema.GroupVersionResource, opts *metav1.ListOptions, err error) bool {
	if opts.ShardSelector == "" || !apierrors.IsBadRequest(err) {
		return false
	}
	gv := gvr.GroupVersion().String()
	if c.server.refuse(gv) {
		c.server.log.Warn("shard: the server refuses shardSelector; objects of other shards are dropped on the client",
			"groupVersion", gv, "shard", c.shard.String(), "err", err)
	}
	opts.ShardSelector = ""
	return true
}

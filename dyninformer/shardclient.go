package dyninformer

import (
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// WithShard returns a client that lists and watches only shard's objects
// (the client's own, unsharded, stays as it is: the CRD watch, audit and tail
// use it). Every list and watch carries the shard's selector. Where the
// server filters by it (the ShardedListAndWatch feature) it does so;
// elsewhere every object comes and the shard's codec drops the others' as it
// reads them, before they are copied, let alone cached. Whether the server
// filtered is learnt, per API group and version, from what comes anyway: a
// list's answer (metadata.shardInfo echoes a selector the server applied),
// and on a watch an object of another shard (it did not) or enough of the
// shard's own and none of another's (it did; see shardlearn.go). Only a
// watch-list that told neither asks, once it has ended, with a list that no
// object matches. A server restarted with the feature turned on or off is
// followed at its next list or watch. log (default slog.Default()) says once
// per group/version which filters.
func (c *Client) WithShard(s Shard, log *slog.Logger) *Client {
	if !s.Sharded() {
		return c
	}
	if log == nil {
		log = slog.Default()
	}
	all := c.Unsharded()
	sc := &Client{rest: all.rest, cfg: all.cfg, http: all.http, shard: s, all: all,
		server: &serverSharding{filters: map[string]bool{}, log: log}}
	if all.cfg != nil {
		// The same transport and rate limit, a codec of the shard.
		cfg := rest.CopyConfig(all.cfg)
		cfg.NegotiatedSerializer = rawSerializer{shard: &sc.shard}
		cfg.RateLimiter = all.rest.GetRateLimiter()
		if rc, err := rest.UnversionedRESTClientForConfigAndClient(cfg, all.http); err == nil {
			sc.rest = rc
		} // else (not seen: the config made all's) keep and the watch filter still drop them
	}
	return sc
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
		// Any shardInfo says the server applied the selector (it may write
		// the selector back in another, equivalent, form), unless the page
		// brought another shard's object anyway: a server (or a proxy) that
		// echoes the field without filtering.
		n := len(l.Items)
		l.Items = c.keep(l.Items)
		others := l.others + n - len(l.Items)
		c.noteFilter(gv, opts.ShardSelector != "" && l.ShardInfo != nil && others == 0)
	}
}

// keep drops, in place, the items of other shards that the codec kept: those
// without a uid (which the server's objects always have), or all of them for
// a client made without a config.
func (c *Client) keep(items []runtime.Object) []runtime.Object {
	out := items[:0]
	for _, it := range items {
		if o, ok := it.(*Object); !ok || c.shard.Owns(o.uid, o.namespace) {
			out = append(out, it)
		}
	}
	clear(items[len(out):])
	return out
}

// shardWatch is Watch's hook before the request: the selector on, unless the
// group/version's server refused it. Nothing is asked first: what the watch
// brings tells whether the server filtered (filterWatch).
func (c *Client) shardWatch(gvr schema.GroupVersionResource, opts *metav1.ListOptions) {
	if c.shard.Sharded() && !c.server.isRefused(gvr.GroupVersion().String()) {
		opts.ShardSelector = c.shard.Selector()
	}
}

// noteFilter records whether gv's server filters, and says so when that is
// news.
func (c *Client) noteFilter(gv string, filters bool) {
	if c.server.set(gv, filters) {
		how := "on the client"
		if filters {
			how = "by the server"
		}
		c.server.log.Info("shard: objects of other shards are dropped "+how, "groupVersion", gv, "shard", c.shard.String())
	}
}

// Unsharded returns the client of everything that c shards (c itself when it
// does not): what every shard watches whole, the CRDs.
func (c *Client) Unsharded() *Client {
	if c == nil || !c.shard.Sharded() {
		return c
	}
	return c.all
}

// shardRetry is List's and Watch's hook after an error: a 400 to a request
// that carried the selector may be the server refusing it (a server whose
// validation of shardSelector differs: an aggregated API server on another
// apiserver library, a syntax it does not take). opts loses the selector and
// the caller retries once; shardRetried then tells which it was.
func (c *Client) shardRetry(opts *metav1.ListOptions, err error) bool {
	if opts.ShardSelector == "" || !apierrors.IsBadRequest(err) {
		return false
	}
	opts.ShardSelector = ""
	return true
}

// shardRetried judges the retry of shardRetry: when it succeeds, the first
// 400 was about the selector, and the client filters gv from then on, and
// says so once. When it fails too, the request
// was bad in another way (a field selector the resource does not support):
// gv's next requests still carry the selector. A refusal holds for
// refuseFor, then the selector is tried again: a server restarted with the
// feature is found out.
func (c *Client) shardRetried(gvr schema.GroupVersionResource, first, err error) {
	if err != nil {
		return
	}
	gv := gvr.GroupVersion().String()
	if c.server.refuse(gv) {
		c.server.log.Warn("shard: the server refuses shardSelector; objects of other shards are dropped on the client",
			"groupVersion", gv, "shard", c.shard.String(), "err", first)
	}
}

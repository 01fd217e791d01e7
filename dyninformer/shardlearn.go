package dyninformer

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/tidwall/gjson"
)

// proofObjects is how many of the shard's own objects (distinct uids: the
// events of one object changed again and again prove nothing), and none of
// another shard's, a watch by uid takes as the server's filtering: a server
// that did not filter would have sent them with a chance of (1/count)^32,
// uids being random. By namespace no count proves it (a namespace's objects
// are all one shard's).
const proofObjects = 32

// noObject is a label selector that no object matches (a label both there
// and not): the list that asks a server whether it filters receives its
// metadata and nothing else.
const noObject = "dynwatch.io/none,!dynwatch.io/none"

// filterWatch drops the events of other shards' objects (bookmarks and
// errors pass), before the informer sees them: those the codec did not read
// (otherShard) and any other it passed on. On a watch that carried the
// selector, what passes tells whether the server filtered (watchLearner).
func (c *Client) filterWatch(ctx context.Context, w watch.Interface, gvr schema.GroupVersionResource, ns, selector string) watch.Interface {
	if !c.shard.Sharded() {
		return w
	}
	l := &watchLearner{c: c, ctx: ctx, gvr: gvr, ns: ns, done: selector == ""}
	return newShardFilterWatch(w, func(ev watch.Event) bool {
		o, ok := ev.Object.(*Object)
		switch {
		case !ok:
			return true
		case ev.Type == watch.Bookmark:
			l.bookmark(o)
			return true
		case o != otherShard && c.shard.Owns(o.uid, o.namespace):
			l.own(o.uid)
			return true
		}
		l.other()
		return false
	})
}

// watchLearner learns from one watch whether its server filters; it runs on
// the watch filter's goroutine.
type watchLearner struct {
	c   *Client
	ctx context.Context
	gvr schema.GroupVersionResource
	ns  string
	// owned: the hashes of the distinct uids of the shard's seen so far.
	owned [proofObjects]uint64
	n     int
	done  bool // learnt, or nothing to learn (no selector sent)
}

func (l *watchLearner) own(uid string) {
	if l.done || l.c.shard.ByNamespace {
		return
	}
	h := fnv1a(uid)
	for _, seen := range l.owned[:l.n] {
		if seen == h {
			return
		}
	}
	l.owned[l.n] = h
	if l.n++; l.n >= proofObjects {
		l.done = true
		l.c.noteFilter(l.gvr.GroupVersion().String(), true)
	}
}

func (l *watchLearner) other() {
	if !l.done {
		l.done = true
		l.c.noteFilter(l.gvr.GroupVersion().String(), false)
	}
}

// bookmark: at the end of a watch-list's initial events that told nothing,
// while the group/version's server is not known, a list that matches no
// object asks it.
func (l *watchLearner) bookmark(o *Object) {
	if l.done || o == otherShard || gjson.GetBytes(o.raw, `metadata.annotations.k8s\.io/initial-events-end`).Str != "true" {
		return
	}
	l.done = true
	if _, known := l.c.server.get(l.gvr.GroupVersion().String()); !known {
		_, _ = l.c.List(l.ctx, l.gvr, l.ns, metav1.ListOptions{LabelSelector: noObject, Limit: 1})
	}
}

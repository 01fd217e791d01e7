package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/dynwatch/dynwatch/state"
)

// The annotations a holder with state writes on its Lease (with
// leaderElection). After a reshard, an object that moved in to a shard is
// compared with its old shard's mark for its scope: at a resourceVersion
// higher, it changed after that shard recorded it, whatever its times say
// (watcher, reshard.go): an update that only removes fields moves no
// managedFields time.
const (
	// annMarks is this holder's file's marks (JSON of state.Store.Marks),
	// once every resource is listed in this term, as of the last renewal
	// (and the last one, as it released the Lease, once acting stopped).
	annMarks = "dynwatch.io/marks"
	// annPrevMarks is what the holder of the shard's previous spec
	// published (annMarks), kept by the holder that took the Lease over
	// under another spec, as labelPrevEnded keeps when it stopped.
	annPrevMarks = "dynwatch.io/prev-marks"
	// annListed is, with shards, once the holder has listed in this term
	// (labelListed), the resourceVersion of each watch's first list, by
	// scope (JSON of watcher.Watcher.Listed): a shard settling records set
	// aside lists as things were then, scope by scope (settleMovedAway).
	annListed = "dynwatch.io/listed"
)

const (
	// marksEvery is how often the marks are read off the file while
	// acting (a holder killed without releasing the Lease leaves those of
	// the last read: lower, so more is replayed, nothing lost).
	marksEvery = 30 * time.Second
	// marksMax bounds the annotation, which every renewal writes (an
	// object's annotations may hold 256 KiB in all): a file of more scopes
	// publishes none, and its objects are compared by times after a
	// reshard.
	marksMax = 64 << 10
)

// dressLease writes, on each write of this process's Lease, the marks it
// publishes, and with shards those of the previous spec's holder.
func (d *daemon) dressLease(l *coordinationv1.Lease) {
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	if m := d.marks.Load(); m != nil {
		l.Annotations[annMarks] = *m
	} else {
		delete(l.Annotations, annMarks) // an earlier holder's: not this file's
	}
	if d.o.File.Config.Shards == nil {
		return
	}
	if d.prevMarks != "" {
		l.Annotations[annPrevMarks] = d.prevMarks
	} else {
		delete(l.Annotations, annPrevMarks)
	}
	if v := d.listedScopes.Load(); v != nil {
		l.Annotations[annListed] = *v
	} else {
		delete(l.Annotations, annListed)
	}
}

// noteListedScopes keeps each watch's first list's resourceVersion for the
// Lease's next write (annListed), unless there are too many to publish.
func (d *daemon) noteListedScopes(listed map[string]string) {
	publish(&d.listedScopes, listed)
}

// publish puts m, as JSON, where dressLease takes it for the Lease's next
// write; nothing (nil) when it is more than marksMax. It reports whether
// it fit.
func publish(to *atomic.Pointer[string], m map[string]string) bool {
	b, err := json.Marshal(m)
	if err != nil || len(b) > marksMax {
		to.Store(nil)
		return false
	}
	v := string(b)
	to.Store(&v)
	return true
}

// prevMarksOf is what the holder of Lease l (as read before this process
// first wrote it; nil: none) under spec cur keeps as the previous spec's
// marks: l's own when it shows another spec, else those it kept.
func prevMarksOf(l *coordinationv1.Lease, cur state.MovedFrom) string {
	if l == nil {
		return ""
	}
	was, ok := leaseSpec(l.Labels, labelShardCount, labelShardBy)
	switch {
	case ok && !sameSpec(was, cur):
		return l.Annotations[annMarks]
	case ok:
		return l.Annotations[annPrevMarks]
	}
	return ""
}

// stringMap reads an annotation that publish wrote (annMarks, annListed);
// nil: none, or not such a map.
func stringMap(v string) map[string]string {
	if v == "" {
		return nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		return nil
	}
	return m
}

// noteMarks reads the marks off the file for the Lease's next write.
func (d *daemon) noteMarks(store *state.Store) {
	m, err := store.Marks()
	if err != nil {
		d.log.Warn("state: cannot read the marks off the file; the Lease keeps the last ones", "err", err)
		return
	}
	fit := publish(&d.marks, m)
	if !fit && !d.marksTooMany {
		d.log.Warn("state: too many scopes to publish their marks on the Lease; after a reshard, objects that moved from this shard are compared by time (an update that only removes fields may be missed)",
			"scopes", len(m), "max", marksMax)
	}
	d.marksTooMany = !fit
}

// publishMarks keeps the marks current, every marksEvery, from listed
// (closed once every resource is listed in this term) until ctx ends.
func (d *daemon) publishMarks(ctx context.Context, store *state.Store, listed <-chan struct{}) {
	select {
	case <-ctx.Done():
		return
	case <-listed:
	}
	t := time.NewTicker(marksEvery)
	defer t.Stop()
	for {
		d.noteMarks(store)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// newTerm forgets, before a term's takeover write, what the last term
// published: its file's marks (this term publishes them once listed), its
// lists, and that it had listed.
func (d *daemon) newTerm() {
	d.marks.Store(nil)
	d.listedScopes.Store(nil)
	if d.join != nil {
		d.join.newTerm()
	}
}

// firstLists are the first lists of the file's shard spec to publish
// (state.Store.KeepFirstLists: a list of this process's counts only for a
// scope the file had not listed since the reshard; the file holds since
// what that first list held), or, without state, this process's.
func firstLists(store *state.Store, listed map[string]string, log *slog.Logger) map[string]string {
	if store == nil {
		return listed
	}
	kept, err := store.KeepFirstLists(listed)
	if err != nil {
		log.Warn("state: cannot keep the first lists of this shard spec; the Lease names this process's", "err", err)
		return listed
	}
	return kept
}

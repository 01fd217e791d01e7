package watcher

import (
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/restart"
	"github.com/dynwatch/dynwatch/state"
)

// moved is what a listed object without a record fires after a reshard:
// it moved in from another shard (its old owner), or is new.
type moved uint8

const (
	// movedNothing: its old owner had it as it is now and fired its events;
	// it is recorded as a baseline.
	movedNothing moved = iota
	// movedAdd: created after its old owner's end, so no shard saw it: a
	// replayed add.
	movedAdd
	// movedUpdate: changed after its old owner's end, which did not see
	// that: a replayed update from nothing known (see movedIn).
	movedUpdate
)

// movedIn decides what a moved-in object fires, given what its old owner
// published: mark (marked false: none) is the highest resourceVersion it
// recorded in the object's scope (state.Store.Marks), end when it last ran
// (ok false: not known). Above the mark (rv), the object changed after its
// old owner recorded it, whatever its times say (an update that only
// removes fields moves no managedFields time; a change still queued in the
// old owner's informer when it was killed has an older time than its
// end). At or below it, or without a mark, times decide as well: created
// and modified are the API server's times, to the second; end is truncated
// to the second, so that a change in the very second it stopped fires (a
// second time if it had seen it: at-least-once). A modified time not known
// (an object without managedFields) counts as changed: nothing is lost for
// want of it. Either way an object created at or after end is an add.
func movedIn(created, modified, end time.Time, ok bool, rv string, mark uint64, marked bool) moved {
	end = end.Truncate(time.Second)
	added := ok && !created.IsZero() && !created.Before(end)
	if v, err := strconv.ParseUint(rv, 10, 64); marked && err == nil && v > mark {
		if added {
			return movedAdd
		}
		return movedUpdate
	}
	switch {
	case !ok:
		return movedNothing
	case added:
		return movedAdd
	case modified.IsZero() || !modified.Before(end):
		return movedUpdate
	}
	return movedNothing
}

// reshardKnown is listing.known after a reshard (state.Tx.Resharded): an
// object of the share without a record moved in from its old owner, which
// had it and fired its events up to its end; from there it is compared as
// movedIn says. baseline is true when it fires nothing. A moved-in update
// is compared with an empty record: its payload has "replay": true, an
// empty oldObject and no changed paths (nothing of its old state is known
// here), and rules decide on it as on an update from nothing.
func (l *listing) reshardKnown(tx *state.Tx, res state.Resource, ev *event.Event) (k restart.Known, baseline bool, err error) {
	if l.resharded {
		if _, _, recorded := tx.Version(res, ev.UID); !recorded {
			end, ok, mark, marked := l.previous(tx).oldOwner(res, ev)
			switch movedIn(timeAt(ev.Object, "metadata.creationTimestamp"), changedAt(ev), end, ok, ev.ResourceVersion, mark, marked) {
			case movedNothing:
				return k, true, nil
			case movedUpdate:
				k, err = l.known(tx, res, ev)
				k.Record = &state.Record{}
				return k, false, err
			}
		}
	}
	k, err = l.known(tx, res, ev)
	return k, false, err
}

// previousSpec is what a file knows of the shard spec before a reshard:
// what the shards' Leases said of it (state.Tx.MovedFrom, known; with
// leaderElection) and when this file's previous spec last ran
// (state.Tx.ReshardedAfter). It does not change while a list is compared.
type previousSpec struct {
	m          state.MovedFrom
	known      bool
	after      time.Time
	afterKnown bool
}

// previous is the file's previousSpec, read once per list (at its first
// object without a record, in the committer's goroutine), not once per
// object: MovedFrom holds every old shard's marks.
func (l *listing) previous(tx *state.Tx) *previousSpec {
	if l.prev == nil {
		p := &previousSpec{}
		p.m, p.known = tx.MovedFrom()
		p.after, p.afterKnown = tx.ReshardedAfter()
		l.prev = p
	}
	return l.prev
}

// oldOwner is what is known of the object's shard under the previous spec:
// when it last ran, as that shard's Lease said at the reshard, else when
// this file's previous spec last ran (the set stops together to reshard);
// and the mark it published for the object's scope of res (marked false:
// none known).
func (p *previousSpec) oldOwner(res state.Resource, ev *event.Event) (end time.Time, ok bool, mark uint64, marked bool) {
	end, ok = p.after, p.afterKnown
	if !p.known {
		return end, ok, 0, false
	}
	owner := ownerUnder(p.m, ev.UID, ev.Namespace)
	if at, known := p.m.End(owner); known {
		end, ok = at, true
	}
	mark, marked = p.m.Mark(owner, res, ev.Namespace)
	return end, ok, mark, marked
}

// ownerUnder is the index of the object's shard under spec m.
func ownerUnder(m state.MovedFrom, uid, namespace string) int {
	return dyninformer.ShardOf(m.Count, m.ByNamespace, uid, namespace)
}

// changedAt is the latest time the object says it changed: its
// managedFields' (modifiedAt), or when its deletion was asked for, which
// writes no managedFields time (deletionTimestamp less the grace period it
// was given; a finalizer may keep the object long after). Zero when it says
// nothing (movedIn then takes it as changed).
func changedAt(ev *event.Event) time.Time {
	m := modifiedAt(ev)
	if m.IsZero() {
		return m // not known: changed
	}
	if del := timeAt(ev.Object, "metadata.deletionTimestamp"); !del.IsZero() {
		grace := gjson.GetBytes(ev.Object, "metadata.deletionGracePeriodSeconds").Int()
		if asked := del.Add(-time.Duration(grace) * time.Second); asked.After(m) {
			return asked
		}
	}
	return m
}

// modifiedAt is when the object was last changed: the informers' decoder
// read it from the managedFields it cut out (event.Event.Modified); an
// object that still has them (made by event.New) is read here.
func modifiedAt(ev *event.Event) time.Time {
	if !ev.Modified.IsZero() {
		return ev.Modified
	}
	var latest time.Time
	for _, r := range gjson.GetBytes(ev.Object, "metadata.managedFields.#.time").Array() {
		if t, err := time.Parse(time.RFC3339, r.Str); err == nil && t.After(latest) {
			latest = t
		}
	}
	return latest
}

// timeAt reads an RFC 3339 time at path (zero when missing).
func timeAt(obj []byte, path string) time.Time {
	t, err := time.Parse(time.RFC3339, gjson.GetBytes(obj, path).Str)
	if err != nil {
		return time.Time{}
	}
	return t
}

// adoptNewShard takes, in the file of a shard new to the set at a reshard,
// the scopes of its first watches as resharded (state.Tx.AdoptNewShard), in
// one transaction before they are noted: their lists are then compared as
// after a reshard, and a crash before they end finds them so again.
func (d *durable) adoptNewShard(watches []dyninformer.Started) {
	var marked bool
	_ = d.store.View(func(tx *state.Tx) error { marked = tx.NewShard(); return nil })
	if !marked {
		return // the common case: no write
	}
	scopes := make([]state.Scope, len(watches))
	for i, w := range watches {
		scopes[i] = watchScope(w.Key())
	}
	var adopted bool
	err := d.store.Update(func(tx *state.Tx) (err error) {
		adopted, err = tx.AdoptNewShard(scopes)
		return err
	})
	switch {
	case err != nil:
		d.log.Error("state: cannot take this new shard's scopes as resharded; they start from a baseline", "err", err)
	case adopted:
		d.log.Info("state: a shard new to the set: objects that moved in are compared with their old shards' ends", "scopes", len(scopes))
	}
}

package watcher

import (
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/restart"
	"github.com/dynwatch/dynwatch/state"
)

// listing is a watch whose initial list is being compared with the records
// (or recorded as new): what it has seen so far, and what the comparison
// needs to know of its scope.
type listing struct {
	res  event.Resource
	seen map[string]bool
	// listed holds the namespace/name of every object listed: a timed
	// rule's wait of an object the list did not have is forgotten
	// (forgetUnlisted).
	listed map[string]bool
	// names maps namespace/name to the recorded uid, when the list is
	// compared with records: an object re-created under its name while
	// dynwatch was down replays the old uid's delete before the new one's add.
	// It is read from the records when the first object without a record
	// comes (most restarts have none), in the committer's goroutine.
	names restart.Names
	// namespace is the watch's namespace ("" = all).
	namespace string
	baseline  bool
	// resharded: the baseline is of another shard spec (see reshardKnown).
	resharded bool
	// prev is what the file knows of the previous shard spec, once read
	// (previous).
	prev *previousSpec
	diff bool // the list is of objects known before (start, reload, move): compare
	// moved: the watch replaced one on another version while dynwatch ran; what
	// changed in between is live, not a replay.
	moved bool
	// finishing is set once the list is complete and its comparison submitted.
	finishing bool
}

// found is the origin of what a comparison finds: a replay after a restart,
// live changes after a version move.
func (l *listing) found() event.Origin {
	if l.moved {
		return event.Live
	}
	return event.Replay
}

// compares reports whether ev, of the listing's watch, is compared with its
// record: an object of an initial list (or relist) of objects known before,
// whose scope has a baseline.
func (l *listing) compares(ev *event.Event) bool {
	return (ev.Origin == event.InitialList || ev.Origin == event.Relist) && l.diff && l.baseline
}

// known reads what the records hold of ev, a listed object: its record (only
// its version and hash when that is the listed version, as for most objects
// at a restart), and, when it has none, the record of the object its name had
// under another uid.
func (l *listing) known(tx *state.Tx, res state.Resource, ev *event.Event) (restart.Known, error) {
	var k restart.Known
	switch rv, hash, recorded := tx.Version(res, ev.UID); {
	case recorded && rv == ev.ResourceVersion:
		k.Record = &state.Record{ResourceVersion: rv, Hash: hash}
		return k, nil
	case recorded:
		var err error
		k.Record, err = tx.Get(res, ev.UID)
		return k, err
	}
	if l.names == nil {
		// The first object without a record: no record has been added in
		// this list yet, so the records are still those it is compared with.
		names := restart.Names{}
		scope := res.In(l.namespace)
		if err := tx.ForEachName(res, func(uid, ns, name string) error {
			names.Add(scope, uid, ns, name)
			return nil
		}); err != nil {
			return k, err
		}
		l.names = names
	}
	if old := l.names.Renamed(ev); old != "" {
		rec, err := tx.Get(res, old)
		if err != nil || rec == nil {
			return k, err
		}
		k.Renamed, k.RenamedUID = rec, old
	}
	return k, nil
}

package restart

import (
	"slices"
	"time"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/state"
)

// MetaPaths are recorded for every object, so that a replayed delete can say
// which object went.
var MetaPaths = []string{"metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels"}

// Known is what the records hold of a listed object.
type Known struct {
	// Record is the object's record, nil when it has none. When its version
	// is the listed one, only its version and hash need be read.
	Record *state.Record
	// Renamed is the record of the object that had the listed one's name
	// under another uid, RenamedUID (nil: none): deleted and re-created
	// while dynwatch was down.
	Renamed    *state.Record
	RenamedUID string
}

// Listed returns what an object of a compared list (ev, of resource res)
// fires before its own event, as origin: the delete of the object its name
// had under another uid, then its add when it is new or its update when it
// changed. key is the file's; now stamps the replayed delete.
func Listed(res event.Resource, ev *event.Event, k Known, origin event.Origin, key state.DigestKey, now time.Time) []*event.Event {
	var out []*event.Event
	if k.Renamed != nil {
		out = append(out, Gone(res, k.RenamedUID, k.Renamed, origin, now))
	}
	if r := Replay(ev, k.Record, origin, key); r != nil {
		out = append(out, r)
	}
	return out
}

// Replay returns the event an object of the initial list fires under onStart
// diff: add when it is new (rec nil), update when it changed while dynwatch
// was down (or, after a version move, while the watch moved), nil when it did
// not: the same version, or a new version of the same content. key is the
// file's.
func Replay(ev *event.Event, rec *state.Record, origin event.Origin, key state.DigestKey) *event.Event {
	r := *ev
	r.Origin = origin
	switch {
	case rec == nil:
		return &r
	case rec.ResourceVersion == ev.ResourceVersion:
		return nil
	}
	if state.SameContent(key, ev.Object, rec.Hash) {
		return nil // a new version of the same content
	}
	r.Type = event.Update
	r.OldObject = state.Doc(rec.Values)
	r.Recorded = state.Recorded{Values: rec.Values, Key: key}
	return &r
}

// Gone is the delete of the object uid of resource res that went while
// dynwatch was down, built from its record.
func Gone(res event.Resource, uid string, r *state.Record, origin event.Origin, now time.Time) *event.Event {
	return &event.Event{
		Type: event.Delete, Resource: res, Object: state.Doc(r.Values), Origin: origin,
		Namespace: r.Namespace, Name: r.Name, UID: uid, ResourceVersion: r.ResourceVersion,
		Time: now,
	}
}

// Vanished returns, sorted, the uids of the records (uid -> namespace) in
// scope whose objects a complete list did not see.
func Vanished(records map[string]string, seen map[string]bool, scope state.Scope) []string {
	var gone []string
	for uid, ns := range records {
		if !seen[uid] && scope.Covers(ns) {
			gone = append(gone, uid)
		}
	}
	slices.Sort(gone)
	return gone
}

// Names indexes records by namespace/name: the uid each name had.
type Names map[string]string

// Add notes the record uid of namespace/name, when scope covers it.
func (n Names) Add(scope state.Scope, uid, namespace, name string) {
	if scope.Covers(namespace) {
		n[namespace+"/"+name] = uid
	}
}

// Renamed returns the uid that ev's name had when it is not ev's, else "".
func (n Names) Renamed(ev *event.Event) string {
	if old := n[ev.Namespace+"/"+ev.Name]; old != ev.UID {
		return old
	}
	return ""
}

// Record is what the file keeps of an object: who it is, its version, the
// values at paths (as digests under key those secret says read a redacted
// value: payload.Redactor.Secret; secret may be nil), and its content hash,
// prev's when prev is of the same version (one version is one content: no
// need to hash it again).
func Record(ev *event.Event, prev *state.Record, paths []string, secret func(path string) bool, key state.DigestKey) *state.Record {
	r := &state.Record{
		Namespace:       ev.Namespace,
		Name:            ev.Name,
		ResourceVersion: ev.ResourceVersion,
		Values:          state.Values(key, ev.Object, paths, secret),
	}
	if prev != nil && prev.ResourceVersion == ev.ResourceVersion {
		r.Hash = prev.Hash
	} else {
		r.Hash, _ = state.Hash(key, ev.Object)
	}
	return r
}

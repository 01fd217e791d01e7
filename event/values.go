package event

import (
	"slices"

	"github.com/tidwall/gjson"
)

// Redacted is what a redacted value reads in every output (payload.Redacted),
// and what a digest reads as in an old object rebuilt from a record.
const Redacted = "<redacted>"

// Recorded is what restart state knew of an object's old state on a replayed
// update: a value at each path the rules read, some of them kept as digests
// that only their keeper can compare (state.Recorded).
type Recorded interface {
	// Same reports whether the value recorded at path stands for raw, the
	// current raw JSON value there ("" when missing).
	Same(path, raw string) bool
	// Paths returns the recorded paths.
	Paths() []string
}

// Differs reports whether the value at path differs between the event's old
// and new object. A replayed update compares with the values recorded before
// the restart, path by path (query paths included, digests of redacted values
// against the digest of the new value); a live update compares the objects.
func (e *Event) Differs(path string) bool {
	if _, _, derived := DerivedRoot(path); derived {
		// health.*: the old object's health against the new one's (a
		// replay's old object is rebuilt from the record, which holds
		// what health reads: rules.Rule.Paths).
		return e.Get(true, path).Raw != e.Get(false, path).Raw
	}
	cur := gjson.GetBytes(e.Object, path).Raw
	if e.Recorded != nil {
		return !e.Recorded.Same(path, cur)
	}
	return gjson.GetBytes(e.OldObject, path).Raw != cur
}

// ChangedRecorded lists, sorted, the recorded paths whose values differ: the
// changed paths of a replayed update, of which only those paths are known.
func (e *Event) ChangedRecorded() []string {
	if e.Recorded == nil {
		return nil
	}
	var out []string
	for _, p := range e.Recorded.Paths() {
		if e.Differs(p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

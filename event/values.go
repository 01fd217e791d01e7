package event

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"github.com/tidwall/gjson"
)

// digestKey marks a recorded value that is a digest of the real one: what
// restart state keeps of a redacted value, enough to tell that it changed.
const digestKey = "$dynwatchSHA256"

// Digest returns the recorded form of a value that must not be kept in clear:
// {"$dynwatchSHA256": "<hex of sha256 of its raw JSON>"}.
func Digest(raw string) json.RawMessage {
	sum := sha256.Sum256([]byte(raw))
	return json.RawMessage(`{"` + digestKey + `":"` + hex.EncodeToString(sum[:]) + `"}`)
}

// Same reports whether a recorded value (raw JSON or a Digest; nil: the path
// was missing) stands for the current raw JSON value ("" when missing).
func Same(recorded json.RawMessage, raw string) bool {
	switch {
	case recorded == nil || raw == "":
		return recorded == nil && raw == ""
	case gjson.GetBytes(recorded, gjson.Escape(digestKey)).Exists():
		return string(recorded) == string(Digest(raw))
	}
	return string(recorded) == raw
}

// Differs reports whether the value at path differs between the event's old
// and new object. A replayed update compares with the values recorded before
// the restart, path by path (query paths included, digests of redacted values
// against the digest of the new value); a live update compares the objects.
func (e *Event) Differs(path string) bool {
	cur := gjson.GetBytes(e.Object, path).Raw
	if e.OldValues != nil {
		return !Same(e.OldValues[path], cur)
	}
	return gjson.GetBytes(e.OldObject, path).Raw != cur
}

// ChangedRecorded lists, sorted, the recorded paths whose values differ: the
// changed paths of a replayed update, of which only those paths are known.
func (e *Event) ChangedRecorded() []string {
	var out []string
	for p := range e.OldValues {
		if e.Differs(p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

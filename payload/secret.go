package payload

import (
	"encoding/json"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/event"
)

// Secret returns what decides, for obj of res, whether the value read at a
// path must not be kept in clear: it must not when the value read from the
// redacted object is another value than the one read from obj. The decision
// is by value, not by spelling, so a path that reaches a redacted value
// through a wildcard, a modifier or an escape (`dat?`,
// `metadata.annotations.*`, `@this.data`, `d\ata.password`) is covered as
// much as `data.password`. The two values are compared decoded, never
// against obj re-encoded: a path that picks a member by its position
// (`@values|3`) picks another one from the redacted object, whose keys are
// sorted, and may pick a redacted value from obj only. Such a path may then
// be kept as a digest without holding a secret, which loses nothing: only
// plain paths are read back from a record (state.Doc), the others only
// compared. It returns nil when nothing of obj is redacted.
func (r *Redactor) Secret(res event.Resource, obj []byte) func(path string) bool {
	if !r.touches(res, obj) {
		return nil
	}
	red := r.Redact(res, obj)
	return func(path string) bool {
		got, want := gjson.GetBytes(red, path).Raw, gjson.GetBytes(obj, path).Raw
		if got == want {
			return false
		}
		// The redacted object is encoded again (sorted keys, its own number
		// format): a value that only reads differently is not a secret.
		g, w := reencode(got), reencode(want)
		return g == nil || w == nil || string(g) != string(w)
	}
}

// reencode is the JSON value raw decoded and encoded as Redact does, or nil
// when it cannot be (and then the value counts as secret).
func reencode(raw string) []byte {
	var v any
	if raw == "" || json.Unmarshal([]byte(raw), &v) != nil {
		return nil
	}
	out, err := Marshal(v)
	if err != nil {
		return nil
	}
	return out
}

package payload

import (
	"encoding/json"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/event"
)

// Secret returns what decides, for obj of res, whether the value read at a
// path must not be kept in clear: it must not when reading the path from the
// redacted object gives something other than reading it from obj. The
// decision is by value, not by spelling, so a path that reaches a redacted
// value through a wildcard, a modifier or an escape (`dat?`,
// `metadata.annotations.*`, `@this.data`, `d\ata.password`) is covered as
// much as `data.password`. It returns nil when nothing of obj is redacted.
func (r *Redactor) Secret(res event.Resource, obj []byte) func(path string) bool {
	if !r.touches(res, obj) {
		return nil
	}
	red := r.Redact(res, obj)
	var norm []byte // obj encoded as Redact encodes, made when first needed
	return func(path string) bool {
		got, want := gjson.GetBytes(red, path).Raw, gjson.GetBytes(obj, path).Raw
		if got == want {
			return false
		}
		// The redacted object is encoded again (sorted keys, its own number
		// format): compare with obj encoded the same way, so that a value
		// that only reads differently is not taken for a secret.
		if norm == nil {
			norm = reencode(obj)
		}
		return len(norm) == 0 || got != gjson.GetBytes(norm, path).Raw
	}
}

// reencode is obj decoded and encoded as Redact does, or empty when Redact
// could not do so either (and then every path counts as secret).
func reencode(obj []byte) []byte {
	var doc map[string]any
	if json.Unmarshal(obj, &doc) != nil {
		return []byte{}
	}
	out, err := Marshal(doc)
	if err != nil {
		return []byte{}
	}
	return out
}

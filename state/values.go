package state

import (
	"encoding/json"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/fieldpath"
)

// Values reads the value at each path from obj; missing paths are left out.
// The values of paths for which secret says so are kept as a digest under key
// (the file's, Store.DigestKey), never in clear (secret may be nil).
func Values(key DigestKey, obj []byte, paths []string, secret func(path string) bool) map[string]json.RawMessage {
	vals := make(map[string]json.RawMessage, len(paths))
	for _, p := range paths {
		v := gjson.GetBytes(obj, p)
		switch {
		case !v.Exists():
		case secret != nil && secret(p):
			vals[p] = key.Digest(v.Raw)
		default:
			vals[p] = json.RawMessage(v.Raw)
		}
	}
	return vals
}

// Doc rebuilds a JSON object holding vals at their paths, so that gjson reads
// the same values from it as from the object they came from. Only plain dotted
// paths can be rebuilt (a numeric component becomes an object key, which gjson
// reads like an array index); paths with queries or wildcards are left out. A
// digest reads as a redacted value does (event.Redacted): it stands for its
// value only to compare with, and must not reach a payload, where a receiver
// could try a dictionary on it.
func Doc(vals map[string]json.RawMessage) []byte {
	root := map[string]any{}
	for p, v := range vals {
		keys, ok := fieldpath.Split(p)
		if !ok {
			continue
		}
		if IsDigest(v) {
			v = json.RawMessage(`"` + event.Redacted + `"`)
		}
		m := root
		for _, k := range keys[:len(keys)-1] {
			child, ok := m[k].(map[string]any)
			if !ok {
				child = map[string]any{}
				m[k] = child
			}
			m = child
		}
		m[keys[len(keys)-1]] = v
	}
	b, _ := json.Marshal(root)
	return b
}

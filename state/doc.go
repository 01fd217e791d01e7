package state

import (
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"
)

// Values reads the value at each path from obj; missing paths are left out.
func Values(obj []byte, paths []string) map[string]json.RawMessage {
	vals := make(map[string]json.RawMessage, len(paths))
	for _, p := range paths {
		if v := gjson.GetBytes(obj, p); v.Exists() {
			vals[p] = json.RawMessage(v.Raw)
		}
	}
	return vals
}

// Doc rebuilds a JSON object holding vals at their paths, so that gjson reads
// the same values from it as from the object they came from. Only plain dotted
// paths can be rebuilt (a numeric component becomes an object key, which gjson
// reads like an array index); paths with queries or wildcards are left out.
func Doc(vals map[string]json.RawMessage) []byte {
	root := map[string]any{}
	for p, v := range vals {
		keys, ok := plainKeys(p)
		if !ok {
			continue
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

// plainKeys splits a dotted gjson path into keys, honouring escapes; ok is false
// for paths that use gjson's query, wildcard or modifier syntax.
func plainKeys(p string) ([]string, bool) {
	var keys []string
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\' && i+1 < len(p):
			i++
			b.WriteByte(p[i])
		case c == '.':
			keys = append(keys, b.String())
			b.Reset()
		case strings.IndexByte("*?#|@()[]{}!=<>", c) >= 0:
			return nil, false
		default:
			b.WriteByte(c)
		}
	}
	keys = append(keys, b.String())
	for _, k := range keys {
		if k == "" {
			return nil, false
		}
	}
	return keys, true
}

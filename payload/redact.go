package payload

import (
	"encoding/json"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/fieldpath"
)

// Redacted is what a blanked value reads.
const Redacted = event.Redacted

// Redactor blanks configured paths in objects of configured kinds. Objects of
// other kinds pass through untouched and uncopied.
type Redactor struct {
	byKind map[string][]redactPaths
}

type redactPaths struct {
	group    config.OptString
	keys     [][]string
	rawPaths []string
}

// NewRedactor compiles a redact list whose paths config has checked. Every
// entry blanks the last-applied-configuration annotation too
// (config.LastAppliedPath): it holds a copy of the values the entry blanks.
func NewRedactor(list []config.Redaction) *Redactor {
	r := &Redactor{byKind: map[string][]redactPaths{}}
	for _, e := range list {
		paths := e.Paths
		if !slices.Contains(paths, config.LastAppliedPath) {
			paths = append(slices.Clip(paths), config.LastAppliedPath)
		}
		rp := redactPaths{group: e.Group, rawPaths: paths}
		for _, p := range paths {
			if keys, ok := fieldpath.Split(p); ok {
				rp.keys = append(rp.keys, keys)
			}
		}
		r.byKind[e.Kind] = append(r.byKind[e.Kind], rp)
	}
	return r
}

func (r *Redactor) entries(res event.Resource) []redactPaths {
	var out []redactPaths
	for _, e := range r.byKind[res.Kind] {
		if !e.group.Set || e.group.Val == res.Group {
			out = append(out, e)
		}
	}
	return out
}

// Redact returns obj with every configured path blanked. Under a blanked object
// or array, the keys stay and every leaf value reads "<redacted>", so a reader
// still sees which keys exist; a blanked scalar reads "<redacted>".
func (r *Redactor) Redact(res event.Resource, obj []byte) []byte {
	if !r.touches(res, obj) {
		return obj
	}
	entries := r.entries(res)
	var doc map[string]any
	if err := json.Unmarshal(obj, &doc); err != nil {
		// Not an object: send nothing of it rather than risk a leak.
		return []byte(`"` + Redacted + `"`)
	}
	for _, e := range entries {
		for _, keys := range e.keys {
			blank(doc, keys)
		}
	}
	out, err := Marshal(doc)
	if err != nil {
		return []byte(`"` + Redacted + `"`)
	}
	return out
}

// touches reports whether obj, of res, holds a value at a configured path.
func (r *Redactor) touches(res event.Resource, obj []byte) bool {
	if obj == nil || r == nil {
		return false
	}
	for _, e := range r.entries(res) {
		for _, p := range e.rawPaths {
			if gjson.GetBytes(obj, p).Exists() {
				return true
			}
		}
	}
	return false
}

func blank(m map[string]any, keys []string) {
	v, ok := m[keys[0]]
	if !ok {
		return
	}
	if len(keys) > 1 {
		if child, ok := v.(map[string]any); ok {
			blank(child, keys[1:])
		}
		return
	}
	m[keys[0]] = blankAll(v)
}

func blankAll(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			t[k] = blankAll(c)
		}
		return t
	case []any:
		for i, c := range t {
			t[i] = blankAll(c)
		}
		return t
	default:
		return Redacted
	}
}

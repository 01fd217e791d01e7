package rules

import (
	"encoding/json"
	"strings"
	"text/template"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/event"
)

// Redacted is what a blanked value reads.
const Redacted = "<redacted>"

// DefaultRedact is the built-in redact list: a Secret's data and stringData, and
// the last-applied-configuration annotation that `kubectl apply` leaves on it,
// which holds the same values in clear.
func DefaultRedact() []Redaction {
	return []Redaction{{
		Kind:  "Secret",
		Group: OptString{Set: true},
		Paths: []string{"data", "stringData", `metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration`},
	}}
}

// Redactor blanks configured paths in objects of configured kinds. Objects of
// other kinds pass through untouched and uncopied.
type Redactor struct {
	byKind map[string][]redactPaths
}

type redactPaths struct {
	group    OptString
	keys     [][]string
	rawPaths []string
}

// NewRedactor compiles a redact list.
func NewRedactor(list []Redaction) *Redactor {
	r := &Redactor{byKind: map[string][]redactPaths{}}
	for _, e := range list {
		rp := redactPaths{group: e.Group, rawPaths: e.Paths}
		for _, p := range e.Paths {
			rp.keys = append(rp.keys, splitPlainPath(p))
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
	if obj == nil || r == nil {
		return obj
	}
	entries := r.entries(res)
	if len(entries) == 0 {
		return obj
	}
	touched := false
	for _, e := range entries {
		for _, p := range e.rawPaths {
			if gjson.GetBytes(obj, p).Exists() {
				touched = true
			}
		}
	}
	if !touched {
		return obj
	}
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
	out, err := marshal(doc)
	if err != nil {
		return []byte(`"` + Redacted + `"`)
	}
	return out
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

// TemplateFuncs is the function set of webhook body templates. It is small and
// safe on purpose: nothing in it reads files, the environment or the network.
func TemplateFuncs() template.FuncMap {
	return template.FuncMap{
		// json encodes a value as JSON.
		"json": func(v any) (string, error) {
			if raw, ok := v.(json.RawMessage); ok {
				return string(raw), nil
			}
			b, err := json.Marshal(v)
			return string(b), err
		},
		// get reads a gjson path from a JSON document such as .Object; it
		// returns the value's JSON-decoded form, or nil when the path is missing.
		"get": func(doc any, path string) any {
			var raw []byte
			switch d := doc.(type) {
			case json.RawMessage:
				raw = d
			case []byte:
				raw = d
			case string:
				raw = []byte(d)
			default:
				return nil
			}
			res := gjson.GetBytes(raw, path)
			if !res.Exists() {
				return nil
			}
			return res.Value()
		},
		"lower": strings.ToLower,
		"upper": strings.ToUpper,
		"join":  func(sep string, xs []string) string { return strings.Join(xs, sep) },
	}
}

package payload

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/template"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/event"
)

// ParseTemplate compiles a webhook body template, once, and runs it on a sample
// payload, so that a reference to a field the payload does not have is a config
// error at load rather than a delivery error on every event. Errors that depend
// on an event's data (a missing map key, a function failing) can only show at
// delivery.
func ParseTemplate(body string) (*template.Template, error) {
	t, err := template.New("body").Option("missingkey=error").Funcs(TemplateFuncs()).Parse(body)
	if err != nil {
		return nil, fmt.Errorf("bad template: %w", err)
	}
	sample := &event.Payload{ID: "uid:1:add", Type: event.Add, Object: []byte(`{}`)}
	err = t.Execute(io.Discard, sample)
	var execErr template.ExecError
	if errors.As(err, &execErr) && strings.Contains(err.Error(), "can't evaluate field") {
		return nil, fmt.Errorf("bad template: %w (the event has: %s)", err, templateFields)
	}
	return t, nil
}

// templateFields names what a body template can read from the event.
const templateFields = ".ID .Time .Type .Replay .Rule .Resource (.Group .Version .Resource .Kind .Namespaced) .Namespace .Name .UID .ResourceVersion .Fields .Changed .Object .OldObject"

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

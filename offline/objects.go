package offline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/tidwall/gjson"
	"sigs.k8s.io/yaml"
)

// ReadObjects reads the objects of a JSON or YAML file: each document of a
// multi-document file, and each item of a kind: List, as compact JSON, with
// managedFields cut out as run's informers cut them.
func ReadObjects(path string) ([][]byte, error) {
	objs, _, err := ReadObjectsManaged(path)
	return objs, err
}

// ReadObjectsManaged is ReadObjects, and each object's managedFields array
// as the file had it (nil: none), which an update's and a delete's actor is
// read from (Test.NewManaged).
func ReadObjectsManaged(path string) (objs, managed [][]byte, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var out [][]byte
	add := func(obj []byte) {
		obj = compact(obj)
		var mf []byte
		if r := gjson.GetBytes(obj, "metadata.managedFields"); r.IsArray() {
			mf = []byte(r.Raw)
		}
		out, managed = append(out, cutManagedFields(obj)), append(managed, mf)
	}
	n := 0 // documents that hold something
	for _, doc := range splitDocuments(data) {
		b, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		if t := bytes.TrimSpace(b); len(t) == 0 || string(t) == "null" {
			continue
		}
		n++
		if !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
			return nil, nil, fmt.Errorf("%s: want objects (mappings), not a list or a value", path)
		}
		if items := gjson.GetBytes(b, "items"); strings.HasSuffix(gjson.GetBytes(b, "kind").Str, "List") && items.IsArray() {
			kind, apiVersion := strings.TrimSuffix(gjson.GetBytes(b, "kind").Str, "List"), gjson.GetBytes(b, "apiVersion").Str
			var err error
			items.ForEach(func(i, it gjson.Result) bool {
				item := withKind([]byte(it.Raw), kind, apiVersion)
				if err = typeProblem(item, fmt.Sprintf("%s: document %d, item %d", path, n, i.Int()+1)); err != nil {
					return false
				}
				add(item)
				return true
			})
			if err != nil {
				return nil, nil, err
			}
			continue
		}
		if err := typeProblem(b, fmt.Sprintf("%s: document %d", path, n)); err != nil {
			return nil, nil, err
		}
		add(b)
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%s: holds no object", path)
	}
	return out, managed, nil
}

// typeProblem says what obj lacks of its type, an apiVersion or a kind,
// which rules select it by, and how to add it; nil when it has both. where
// names the object (file and document).
func typeProblem(obj []byte, where string) error {
	f := gjson.GetManyBytes(obj, "apiVersion", "kind", "metadata.name")
	name := ""
	if f[2].Str != "" {
		name = fmt.Sprintf(" (%s)", f[2].Str)
	}
	switch {
	case f[0].Str == "":
		return fmt.Errorf("%s%s has no apiVersion: add apiVersion: v1 for a core kind (ConfigMap, Pod, Secret), or GROUP/VERSION (apps/v1 for a Deployment), as kubectl get -o yaml prints it", where, name)
	case f[1].Str == "":
		return fmt.Errorf("%s%s has no kind: add kind: (Deployment, ConfigMap, …), as kubectl get -o yaml prints it", where, name)
	}
	return nil
}

// withKind gives an item of a list the list's kind (without "List") and
// apiVersion when it has none, as the API server's lists of built-in types
// leave them out of their items and run's informers put them back: a
// SecretList's items are Secrets, redacted as Secrets are.
func withKind(item []byte, kind, apiVersion string) []byte {
	if kind == "" || gjson.GetBytes(item, "kind").Exists() || !bytes.HasPrefix(item, []byte("{")) {
		return item
	}
	add := map[string]string{"kind": kind}
	if !gjson.GetBytes(item, "apiVersion").Exists() {
		add["apiVersion"] = apiVersion
	}
	head, _ := json.Marshal(add)
	rest := bytes.TrimSpace(item[1:])
	if !bytes.HasPrefix(rest, []byte("}")) {
		head = append(head[:len(head)-1], ',')
	} else {
		head = head[:len(head)-1]
	}
	return append(head, rest...)
}

// splitDocuments splits a YAML stream at its "---" lines.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if t := bytes.TrimRight(line, " \t\r\n"); string(t) == "---" || bytes.HasPrefix(t, []byte("--- ")) {
			docs = append(docs, cur)
			cur = nil
			continue
		}
		cur = append(cur, line...)
	}
	return append(docs, cur)
}

// cutManagedFields drops metadata.managedFields, as run's informers do, so
// that rules and payloads see the object as run would. Its other values are
// kept byte for byte (the top level's and metadata's keys come out sorted).
func cutManagedFields(obj []byte) []byte {
	if !gjson.GetBytes(obj, "metadata.managedFields").Exists() {
		return obj
	}
	var doc, md map[string]json.RawMessage
	if json.Unmarshal(obj, &doc) != nil || json.Unmarshal(doc["metadata"], &md) != nil {
		return obj
	}
	delete(md, "managedFields")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(md) != nil {
		return obj
	}
	doc["metadata"] = bytes.TrimSpace(bytes.Clone(buf.Bytes()))
	buf.Reset()
	if enc.Encode(doc) != nil {
		return obj
	}
	return bytes.TrimSpace(buf.Bytes())
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

package offline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/rules"
)

func write(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "objs.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A file's objects are its documents and the items of a kind: List (given
// the list's kind), as compact JSON without managedFields.
func TestReadObjects(t *testing.T) {
	t.Parallel()
	p := write(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: a, managedFields: [{manager: kubectl}]}
---
--- # an empty document is skipped
apiVersion: v1
kind: SecretList
items:
  - metadata: {name: s}
`)
	objs, err := ReadObjects(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("%d objects: %q", len(objs), objs)
	}
	if got := string(objs[0]); got != `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}` {
		t.Errorf("first object %s", got)
	}
	if got := string(objs[1]); got != `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}` {
		t.Errorf("the list's item %s", got)
	}
	for _, tt := range []struct{ name, content, want string }{
		{"empty", "---\n", "holds no object"},
		{"a list", "- a\n- b\n", "want objects (mappings)"},
	} {
		if _, err := ReadObjects(write(t, tt.content)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}

// Without a cluster, the resource is named from the object and the rule: the
// plural guessed from the kind (the one a selector may name); built-in cluster-scoped kinds have
// no namespace, every other kind has one.
func TestResourceOf(t *testing.T) {
	t.Parallel()
	rule, err := rules.CompileRule(config.RuleSpec{Name: "r", Actions: []string{"out"},
		Resources: []config.Selector{{Group: config.OptString{Set: true, Val: "example.com"}, Resource: "gizmos"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		obj           string
		plural, group string
		namespaced    bool
	}{
		{`{"apiVersion":"v1","kind":"Namespace"}`, "namespaces", "", false},
		{`{"apiVersion":"apps/v1","kind":"Deployment"}`, "deployments", "apps", true},
		{`{"apiVersion":"example.com/v1","kind":"Gizmo"}`, "gizmos", "example.com", true},
		{`{"apiVersion":"v1","kind":"Node","metadata":{"namespace":"x"}}`, "nodes", "", true},
	} {
		res := ResourceOf([]byte(tt.obj), rule)
		if res.Resource != tt.plural || res.Group != tt.group || res.Namespaced != tt.namespaced {
			t.Errorf("%s: %+v", tt.obj, res)
		}
	}
}

// An object without apiVersion or kind is refused with the file, the
// document and what to add: rules select objects by both.
func TestReadObjectsWithoutType(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, content, want string }{
		{"no apiVersion", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: Deployment\nmetadata: {name: web}\n",
			": document 2 (web) has no apiVersion: add apiVersion: v1 for a core kind (ConfigMap, Pod, Secret), or GROUP/VERSION (apps/v1 for a Deployment)"},
		{"no kind", "apiVersion: apps/v1\nmetadata: {name: web}\n", ": document 1 (web) has no kind: add kind:"},
		{"list item", "apiVersion: v1\nkind: List\nitems:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n  - {kind: ConfigMap, metadata: {name: b}}\n",
			": document 1, item 2 (b) has no apiVersion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := write(t, tt.content)
			_, err := ReadObjects(p)
			if err == nil || !strings.HasPrefix(err.Error(), p+tt.want) {
				t.Errorf("got %v, want %q", err, p+tt.want)
			}
		})
	}
}

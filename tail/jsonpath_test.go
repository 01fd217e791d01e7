package tail

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Paths as kubectl users write them (custom-columns and JSONPath) become the
// gjson paths dynwatch evaluates, reading the same value; what gjson cannot say
// the same way is refused with the spelling that works.
func TestKubePath(t *testing.T) {
	obj := `{"spec":{"size":3,"containers":[{"name":"a","image":"x:1"},{"name":"web","image":"y:2"}]},"metadata":{"labels":{"app.kubernetes.io/name":"shop"}}}`
	for _, tc := range []struct{ in, want, value string }{
		{".spec.size", "spec.size", "3"},
		{"{.spec.size}", "spec.size", "3"},
		{"{$.spec.size}", "spec.size", "3"},
		{"spec.size", "spec.size", "3"},
		{".spec.containers[1].image", "spec.containers.1.image", "y:2"},
		{"{.spec.containers[*].name}", "spec.containers.#.name", `["a","web"]`},
		{".metadata.labels['app.kubernetes.io/name']", `metadata.labels.app\.kubernetes\.io/name`, "shop"},
		{`{.metadata.labels.app\.kubernetes\.io/name}`, `metadata.labels.app\.kubernetes\.io/name`, "shop"},
		{`spec.containers.#(name=="web").image`, `spec.containers.#(name=="web").image`, "y:2"},
	} {
		got, err := kubePath(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("kubePath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			continue
		}
		if v := gjson.Get(obj, got); v.String() != tc.value && v.Raw != tc.value {
			t.Errorf("%s reads %s, want %s", got, v.Raw, tc.value)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{`{.spec.containers[?(@.name=="web")].image}`, `JSONPath filters are not taken; in gjson: spec.containers.#(name=="web").image (the first match`},
		{`.spec.containers[?(@.name=='web')]`, `in gjson: spec.containers.#(name=="web")`},
		{"{.spec.containers[0:1]}", "JSONPath slices are not taken"},
		{"{..image}", "recursive descent"},
		{"{range .items[*]}{.name}{end}", "one JSONPath expression is taken"},
	} {
		_, err := kubePath(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("kubePath(%q): %v, want %q", tc.in, err, tc.want)
		}
	}
	// The spelling a refusal gives works.
	if v := gjson.Get(obj, `spec.containers.#(name=="web").image`); v.Str != "y:2" {
		t.Errorf("the suggested spelling reads %q", v.Raw)
	}
}

package tail

import (
	"testing"

	"github.com/tidwall/gjson"
)

// Paths kubectl's JSONPath reads that the first translation lost: a negative
// index (counted from the end), spaces inside the braces. Each must read the
// value kubectl would print.
func TestKubePathAsKubectlReads(t *testing.T) {
	obj := `{"spec":{"containers":[{"image":"x:1"},{"image":"y:2"},{"image":"z:3"}]}}`
	for _, tc := range []struct{ in, value string }{
		{`.spec.containers[-1].image`, `"z:3"`},
		{`{.spec.containers[-2].image}`, `"y:2"`},
		{`{ .spec.containers[0].image }`, `"x:1"`},
	} {
		got, err := kubePath(tc.in)
		if err != nil {
			t.Errorf("kubePath(%q): %v", tc.in, err)
			continue
		}
		if v := gjson.Get(obj, got).Raw; v != tc.value {
			t.Errorf("kubePath(%q) = %q, reads %q; want %s", tc.in, got, v, tc.value)
		}
	}
}

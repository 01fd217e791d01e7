package tail

import (
	"strings"
	"testing"
)

// A lone '=' is not read as part of a path: the error suggests '=='.
func TestParseWhereSingleEquals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ expr, want string }{
		{"a = 3", `cannot read "a = 3": '=' is not an operator; did you mean 'a == 3'?`},
		{"spec.size=3", `did you mean 'spec.size == 3'?`},
		{"status.phase =Running", `did you mean 'status.phase == Running'?`},
		{"spec.x ~= 3", `cannot read "spec.x ~= 3": '~=' is not an operator; did you mean 'spec.x =~ 3'?`},
		{"metadata.name~=web-.*", `did you mean 'metadata.name =~ web-.*'?`},
	} {
		_, err := ParseWhere(tc.expr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.expr, err, tc.want)
		}
	}
	// '=' inside a gjson query, or in an operator, is no lone '='.
	for _, expr := range []string{`spec.items.#(name="a")`, "a == 3", "a != 3", "a >= 3", "a <= 3", "a =~ x=y"} {
		if _, err := ParseWhere(expr); err != nil {
			t.Errorf("%q: %v", expr, err)
		}
	}
}

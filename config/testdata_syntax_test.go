package config

import "testing"

// A YAML syntax error is reported at the line where the problem is, once.
func TestSyntaxErrorLine(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"apiVersion: dynwatch/v1alpha1\nactions: []\nrules:\n  - name: a\n    resources: [{kind: X}]\n    actions: [out]\n  - name: b\n    resources: [{kind: Y}\n    actions: [out]\n", `t.yaml:8: did not find expected ',' or ']'`},
		{"a: 1\n  b: 2\n", "t.yaml:2: mapping values are not allowed in this context"},
	} {
		_, err := Parse("t.yaml", []byte(tc.src))
		if err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %s", err, tc.want)
		}
	}
}

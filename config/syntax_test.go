package config

import "testing"

// A key or item at the wrong indentation, or a tab, is reported at its own
// line, not at the first line of the list item that holds it.
func TestSyntaxErrorAtBadLine(t *testing.T) {
	t.Parallel()
	head := "apiVersion: dynwatch/v1alpha1\nactions: [{name: out, log: {}}]\nrules:\n  - name: a\n    resources: [{kind: X}]\n    when:\n      - path: spec.a\n"
	for _, tc := range []struct{ name, tail, want string }{
		{"key under-indented", "       op: exists\n", "t.yaml:8: did not find expected '-' indicator"},
		{"key at the list's indentation", "        op: equals\n      value: 3\n", "t.yaml:9: did not find expected '-' indicator"},
		{"item inside a mapping", "        op: exists\n        - x\n", "t.yaml:9: did not find expected key"},
		{"tab", "\t  op: exists\n", "t.yaml:8: found a tab character that violates indentation"},
		{"unclosed quote: where it opens", "        op: \"exists\n    actions: [out]\n", "t.yaml:8: found unexpected end of stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(head+tc.tail))
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %s", err, tc.want)
			}
		})
	}
}

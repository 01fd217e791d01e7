package config

import (
	"strings"
	"testing"
)

// An operator's symbol written without quotes is not what YAML reads: `>`
// starts a folded block, `!=` a tag, and in a flow mapping or before `=` a
// syntax error. Each is reported at the op's line with the quoting that works,
// not as a missing op or a bare parser message.
func TestUnquotedOpSymbol(t *testing.T) {
	t.Parallel()
	const head = "apiVersion: dynwatch/v1alpha1\nactions: [{name: o, log: {}}]\nrules:\n  - name: r\n    resources: [{kind: ConfigMap}]\n    actions: [o]\n"
	for _, tc := range []struct{ name, when, want string }{
		{"block >", "    when:\n      - path: data.n\n        op: >\n        value: 3\n", `t.yaml:9: rules[0].when[0].op: YAML reads > here as a folded block, empty: quote it, as in op: ">"`},
		{"block !=", "    when:\n      - path: data.n\n        op: !=\n        value: 3\n", `t.yaml:9: rules[0].when[0].op: YAML reads != as a tag: quote it, as in op: "!="`},
		{"block >=", "    when:\n      - path: data.n\n        op: >=\n        value: 3\n", `t.yaml:9: did not find expected comment or line break (quote an operator's symbol in YAML: op: ">=")`},
		{"flow >", "    when: [{path: data.n, op: >, value: 3}]\n", `t.yaml:7: found character that cannot start any token (quote an operator's symbol in YAML: op: ">")`},
		{"flow !=", "    when: [{path: data.n, op: !=, value: 3}]\n", `t.yaml:7: did not find expected ',' or '}' (quote an operator's symbol in YAML: op: "!=")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(head+tc.when))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant %s", err, tc.want)
			}
		})
	}
	for _, ok := range []string{"op: <", "op: <=", "op: ==", "op: =~", `op: ">"`, `op: "!="`, "op: gt"} {
		if _, err := Parse("t.yaml", []byte(head+"    when:\n      - path: data.n\n        "+ok+"\n        value: 3\n")); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

package tail

import (
	"testing"

	"github.com/dynwatch/dynwatch/config"
)

// FuzzParseWhere feeds --where arbitrary expressions: it may refuse them, never
// panic, and what it accepts compiles or is refused with an error.
// Run: go test ./tail -run '^$' -fuzz FuzzParseWhere -fuzztime 60s
func FuzzParseWhere(f *testing.F) {
	for _, s := range []string{
		"spec.replicas > 3", "status.phase == Running", "!spec.paused", "spec.paused",
		`metadata.name =~ web-.*`, `x =~ \Qfoo`, "spec.size => 3", "a >= 1.5", `a == "5"`, "a != null",
		`spec.containers.#(name=="a").image == nginx`, "=", "! ", "a == [1,2]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		cond, err := ParseWhere(expr)
		if err != nil {
			return
		}
		o := Options{Where: []config.ConditionSpec{cond}}
		_, _ = o.Rule()
	})
}

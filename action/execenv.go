package action

import (
	"maps"
	"slices"
)

// passedEnv are the variables of dynwatch's environment that every command
// gets, when dynwatch has them: what programs need to find programs, a home,
// a temporary directory, the time zone and the locale. Nothing else is passed
// on: dynwatch's environment holds the secrets that webhook headers and URLs
// take through ${VAR}. A command that needs more names it in exec.env.
var passedEnv = []string{"PATH", "HOME", "TMPDIR", "TZ", "LANG", "LC_ALL"}

// defaultPath is PATH for a command when dynwatch has none.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// commandEnv returns a command's environment without the per-event DYNWATCH_*
// variables: passedEnv from lookup, then the spec's env (already expanded at
// load), which overrides them, in name order.
func commandEnv(lookup func(string) (string, bool), extra map[string]string) []string {
	vals := map[string]string{"PATH": defaultPath}
	for _, k := range passedEnv {
		if v, ok := lookup(k); ok {
			vals[k] = v
		}
	}
	maps.Copy(vals, extra)
	out := make([]string, 0, len(vals)+6)
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		out = append(out, k+"="+vals[k])
	}
	return out
}

package config

import (
	"maps"
	"regexp"
	"slices"
	"strings"
)

// envNameRE is what a portable environment variable name looks like.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ReservedEnvPrefix starts the names of the variables dynwatch gives every
// command (DYNWATCH_TYPE, DYNWATCH_RULE, ...): exec.env cannot set them.
const ReservedEnvPrefix = "DYNWATCH_"

// validateEnv checks exec.env's names and expands ${VAR} in its values.
func (e *ExecSpec) validateEnv(v *validator, p string) {
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		switch {
		case !envNameRE.MatchString(k):
			v.errf(p+"."+k, "invalid environment variable name %q (want letters, digits and _, not starting with a digit)", k)
		case strings.HasPrefix(k, ReservedEnvPrefix):
			v.errf(p+"."+k, "%s* variables are set by dynwatch for every event", ReservedEnvPrefix)
		default:
			e.Env[k] = expandEnv(v, p+"."+k, e.Env[k])
		}
	}
}

// positive reports a duration that is zero or negative at p: a timeout of
// 0s would fail every attempt at once (exec) or mean none at all (HTTP).
func positive(v *validator, p string, d *Duration) *Duration {
	if *d <= 0 {
		v.errf(p, "must be positive, got %s", d.Std())
	}
	return d
}

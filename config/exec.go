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

// settableEnv reports whether exec.env may set the variable k; the value of
// one it may not is not expanded.
func settableEnv(k string) bool {
	return envNameRE.MatchString(k) && !strings.HasPrefix(k, ReservedEnvPrefix)
}

// validateEnv checks exec.env's names, and reports the unset variables of
// their values.
func (e *ExecSpec) validateEnv(v *validator, p string) {
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		switch {
		case !envNameRE.MatchString(k):
			v.errf(p+"."+k, "invalid environment variable name %q (want letters, digits and _, not starting with a digit)", k)
		case strings.HasPrefix(k, ReservedEnvPrefix):
			v.errf(p+"."+k, "%s* variables are set by dynwatch for every event", ReservedEnvPrefix)
		default:
			v.reportEnv(p + "." + k)
		}
	}
}

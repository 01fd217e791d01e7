package config

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
)

// The expansion step: ${VAR} in the fields that take it is replaced from the
// environment once, after decoding and before the defaults and checks. A
// variable that is not set is a problem at the field's path (or, with
// Options.UnsetEnvWarns, a warning that leaves the field unjudged); it is
// reported by reportEnv where the checks reach the field, so that it reads in
// the order of the field's other problems.

var envRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func (c *Config) expandEnv(v *validator) {
	for i := range c.Actions {
		for _, k := range c.Actions[i].kinds() {
			if k.set {
				k.spec.expandEnv(v, fmt.Sprintf("actions[%d].%s", i, k.name))
			}
		}
	}
}

func (l *LogSpec) expandEnv(*validator, string) {}

func (w *WebhookSpec) expandEnv(v *validator, p string) {
	w.URL = v.expand(p+".url", w.URL)
	for _, k := range slices.Sorted(maps.Keys(w.Headers)) {
		if !reservedHeader(k) {
			w.Headers[k] = v.expand(p+".headers."+k, w.Headers[k])
		}
	}
}

func (e *ExecSpec) expandEnv(v *validator, p string) {
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		if settableEnv(k) {
			e.Env[k] = v.expand(p+".env."+k, e.Env[k])
		}
	}
}

func (k *KafkaSpec) expandEnv(v *validator, p string) {
	for i := range k.Brokers {
		k.Brokers[i] = v.expand(fmt.Sprintf("%s.brokers[%d]", p, i), k.Brokers[i])
	}
	if s := k.SASL; s != nil {
		s.Username = v.expand(p+".sasl.username", s.Username)
		s.Password = v.expand(p+".sasl.password", s.Password)
	}
}

func (n *NATSSpec) expandEnv(v *validator, p string) {
	n.URL = v.expand(p+".url", n.URL)
	n.Token = v.expand(p+".token", n.Token)
}

// expand replaces ${VAR} in s from the environment, keeps each value it puts
// in for File.Secrets, and records each variable that is not set at p: as a
// warning with Options.UnsetEnvWarns, else as a problem for reportEnv.
func (v *validator) expand(p, s string) string {
	var missing []string
	out := envRE.ReplaceAllStringFunc(s, func(m string) string {
		name := envRE.FindStringSubmatch(m)[1]
		val, ok := os.LookupEnv(name)
		if !ok {
			missing = append(missing, name)
		}
		v.expanded = append(v.expanded, val)
		return val
	})
	for _, name := range missing {
		if v.unsetEnvWarns {
			v.warnUnsetEnv(p, name)
			continue
		}
		if v.envProblems == nil {
			v.envProblems = map[string]Problems{}
		}
		v.envProblems[p] = append(v.envProblems[p], v.file.Problem(p, "environment variable %s is not set", name))
	}
	return out
}

// warnUnsetEnv records that the field at p uses the unset variable name.
func (v *validator) warnUnsetEnv(p, name string) {
	if v.envUnset == nil {
		v.envUnset = map[string]bool{}
	}
	v.envUnset[p] = true
	v.envWarnings = append(v.envWarnings, v.file.Problem(p,
		"warning: environment variable %s is not set; the field is not checked (--strict-env makes this an error)", name))
}

// reportEnv reports the unset variables the expansion step found in the
// field at p; a check calls it where it comes to that field.
func (v *validator) reportEnv(p string) {
	v.problems = append(v.problems, v.envProblems[p]...)
	delete(v.envProblems, p)
}

// reportEnvLeft reports what no check came to: none, while every field the
// expansion step expands is checked, but a variable that is not set is never
// to go unsaid.
func (v *validator) reportEnvLeft() {
	for _, p := range slices.Sorted(maps.Keys(v.envProblems)) {
		v.reportEnv(p)
	}
}

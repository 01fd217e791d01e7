package config

// Warnings are what a valid file says that may not be meant: `dynwatch check`
// prints them (and `run` logs them), and they never stop the file loading.
func (f *File) Warnings() []Problem {
	out := append([]Problem(nil), f.envWarnings...)
	if rs := f.Config.RedactSecrets; rs != nil && !*rs {
		out = append(out, f.Problem("redactSecrets", "warning: false drops the built-in Secret redaction: "+
			"every Secret's data, stringData and last-applied-configuration annotation reach payloads, logs, tail, audit and test in clear, unless a redact entry blanks them"))
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

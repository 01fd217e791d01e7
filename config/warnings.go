package config

// Warnings are what a valid file says that may not be meant: `dynwatch check`
// prints them (and `run` logs them), and they never stop the file loading.
func (f *File) Warnings() []Problem {
	var out []Problem
	if rs := f.Config.RedactSecrets; rs != nil && !*rs {
		out = append(out, f.Problem("redactSecrets", "warning: false drops the built-in Secret redaction: "+
			"every Secret's data, stringData and last-applied-configuration annotation reach payloads, logs, tail, audit and test in clear, unless a redact entry blanks them"))
	}
	return out
}

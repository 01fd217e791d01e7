package main

import flag "github.com/spf13/pflag"

// commandLogs registers --log-level, -v/--verbose and --log-format on a command
// whose own logs are few (API server warnings, mostly): warn by default, info
// with -v. Every command takes them, so that -v means one thing everywhere.
func commandLogs(fs *flag.FlagSet) *logFlags {
	lf := &logFlags{}
	lf.register(fs, "warn", "info")
	return lf
}

// apply builds the logger once the flags are parsed and hands it to k, which
// logs API server warnings with it; ok is false, with a usage error reported,
// when a log flag has a bad value.
func (l *logFlags) apply(fs *flag.FlagSet, e *env, k *kubeFlags) (code int, ok bool) {
	log, err := l.logger(e.stderr)
	if err != nil {
		return usageError(fs, "%v", err), false
	}
	k.log = log
	return exitOK, true
}

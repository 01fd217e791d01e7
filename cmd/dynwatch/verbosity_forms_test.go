package main

import (
	"io"
	"slices"
	"testing"

	flag "github.com/spf13/pflag"
)

// -v takes a level in every form kubectl's -v takes one: -v6, -v 6, -v=6,
// --verbose 6 (and -v alone, 1); what follows a level is an argument again.
func TestVerbosityForms(t *testing.T) {
	for _, tc := range []struct {
		args []string
		v    int
		pos  []string
	}{
		{[]string{"-v6", "pods"}, 6, []string{"pods"}},
		{[]string{"-v", "6", "pods"}, 6, []string{"pods"}},
		{[]string{"pods", "-v", "2"}, 2, []string{"pods"}},
		{[]string{"--verbose", "8", "pods"}, 8, []string{"pods"}},
		{[]string{"-v=0", "pods"}, 0, []string{"pods"}},
		{[]string{"-v", "pods"}, 1, []string{"pods"}},
		{[]string{"pods", "-v"}, 1, []string{"pods"}},
		{[]string{"pods", "--", "-v", "6"}, 0, []string{"pods", "-v", "6"}},
	} {
		fs := flag.NewFlagSet("tail", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var lf logFlags
		lf.register(fs, "warn", "info")
		if code, ok := parse(fs, tc.args); !ok {
			t.Errorf("%q: exit %d", tc.args, code)
			continue
		}
		if lf.verbosity != tc.v || !slices.Equal(fs.Args(), tc.pos) {
			t.Errorf("%q: -v %d, arguments %q; want %d, %q", tc.args, lf.verbosity, fs.Args(), tc.v, tc.pos)
		}
	}
}

package config

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// Warnings are what a valid file says that may not be meant: `dynwatch check`
// prints them (and `run` logs them, at start and at each reload), and they
// never stop the file loading; the insecure shapes are among them unless they
// are refused (insecure.go).
func (f *File) Warnings() []Problem {
	out := append([]Problem(nil), f.envWarnings...)
	rs := f.Config.RedactSecrets
	if rs != nil && !*rs {
		out = append(out, f.Problem("redactSecrets", "warning: false drops the built-in Secret redaction: "+
			"every Secret's data, stringData and last-applied-configuration annotation reach payloads, logs, tail, audit and test in clear, unless a redact entry blanks them"))
	}
	// The file's entries follow the built-in one, unless it is dropped.
	written, _ := f.Config.writtenRedact()
	for i, r := range written {
		if k := r.Kind; k != "" && (k[0] < 'A' || k[0] > 'Z') {
			out = append(out, f.Problem(fmt.Sprintf("redact[%d].kind", i), "warning: %q is not written as a kind is (ConfigMap, not configmap or configmaps): "+
				"kinds match exactly, so this entry may blank nothing", k))
		}
	}
	out = append(out, f.twoGroupWarnings()...)
	out = append(out, f.insecureWarnings()...)
	// In the file's order, as its problems are.
	slices.SortStableFunc(out, func(a, b Problem) int { return cmp.Compare(a.Line, b.Line) })
	return out
}

// builtinInTwoGroups are the built-in resources that two API groups serve
// (resource → kind, groups): a selector that names one without a group
// selects both, and each object then comes twice.
var builtinInTwoGroups = map[string]struct {
	kind   string
	groups [2]string
}{
	"events": {"Event", [2]string{"", "events.k8s.io"}},
}

// twoGroupWarnings warns about each rule selector that names, without a
// group, a built-in resource two groups serve (events: the core group's and
// events.k8s.io's), saying how to pick one.
func (f *File) twoGroupWarnings() []Problem {
	var out []Problem
	for i, r := range f.Config.Rules {
		for j, s := range r.Resources {
			if s.Group.Set {
				continue
			}
			for res, b := range builtinInTwoGroups {
				if s.Resource != res && (s.Resource != "" || s.Kind != b.kind) {
					continue
				}
				out = append(out, f.Problem(fmt.Sprintf("rules[%d].resources[%d]", i, j),
					"warning: %s are served by two API groups, the core group and %s, and this selector, without a group, selects both: each %s comes twice; "+
						"add group: \"\" for the core group's (what kubectl get %s shows) or group: %s", res, b.groups[1], b.kind, res, b.groups[1]))
			}
		}
	}
	return out
}

// LogWarnings logs each of the file's warnings at warning level, with its
// file, line and field path: run's way of saying what check prints.
func (f *File) LogWarnings(log *slog.Logger) {
	for _, w := range f.Warnings() {
		log.Warn(strings.TrimPrefix(w.Msg, "warning: "), "file", w.File, "line", w.Line, "field", w.Path)
	}
}

package config

import (
	"slices"
	"strings"
	"testing"
)

// A redact list adds to the built-in Secret entry; only redactSecrets: false
// drops it, and that is a warning.
func TestRedactKeepsTheSecretEntry(t *testing.T) {
	t.Parallel()
	const head = "apiVersion: dynwatch/v1alpha1\nactions: [{name: o, log: {}}]\nrules: [{name: r, resources: [{kind: Secret}], actions: [o]}]\n"
	for _, c := range []struct {
		name, extra string
		kinds       []string
		warn        bool
	}{
		{"no redact key", "", []string{"Secret"}, false},
		{"a ConfigMap entry", "redact: [{kind: ConfigMap, paths: [data.token]}]\n", []string{"Secret", "ConfigMap"}, false},
		{"an empty list", "redact: []\n", []string{"Secret"}, false},
		{"redactSecrets true", "redactSecrets: true\nredact: [{kind: ConfigMap, paths: [data.token]}]\n", []string{"Secret", "ConfigMap"}, false},
		{"redactSecrets false", "redactSecrets: false\nredact: [{kind: ConfigMap, paths: [data.token]}]\n", []string{"ConfigMap"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse("r.yaml", []byte(head+c.extra))
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, r := range f.Config.Redact {
				kinds = append(kinds, r.Kind)
			}
			if !slices.Equal(kinds, c.kinds) {
				t.Errorf("redact kinds %v, want %v", kinds, c.kinds)
			}
			if kinds[0] == "Secret" && !slices.Equal(f.Config.Redact[0].Paths, DefaultRedact()[0].Paths) {
				t.Errorf("Secret entry %v", f.Config.Redact[0])
			}
			ws := f.Warnings()
			if c.warn != (len(ws) == 1) || len(ws) > 1 {
				t.Fatalf("warnings %v, want one: %v", ws, c.warn)
			}
			if c.warn && !strings.HasPrefix(ws[0].Error(), "r.yaml:4: redactSecrets: warning: false drops the built-in Secret redaction") {
				t.Errorf("warning %q", ws[0].Error())
			}
		})
	}
}

// A redact entry's kind matches a kind exactly: one written as a resource or
// in lower case (configmap, configmaps) would blank nothing, silently, so
// every command that loads the file warns, at its line.
func TestRedactKindInLowerCaseWarns(t *testing.T) {
	t.Parallel()
	const head = "apiVersion: dynwatch/v1alpha1\nactions: [{name: o, log: {}}]\nrules: [{name: r, resources: [{kind: ConfigMap}], actions: [o]}]\n"
	for _, c := range []struct{ extra, want string }{
		{"redact: [{kind: ConfigMap, paths: [data.a]}, {kind: configmaps, paths: [data.token]}]\n", `r.yaml:4: redact[1].kind: warning: "configmaps" is not written as a kind is`},
		{"redactSecrets: false\nredact:\n  - {kind: secret, paths: [data]}\n", `r.yaml:6: redact[0].kind: warning: "secret" is not written as a kind is`},
	} {
		f, err := Parse("r.yaml", []byte(head+c.extra))
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, w := range f.Warnings() {
			found = found || strings.HasPrefix(w.Error(), c.want)
		}
		if !found {
			t.Errorf("%s: warnings %v, want %s", c.extra, f.Warnings(), c.want)
		}
	}
}

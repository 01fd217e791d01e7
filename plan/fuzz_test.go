package plan

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dynwatch/dynwatch/config"
)

// FuzzParse feeds the whole loader (schema, rules, actions) arbitrary files:
// it may report problems, never panic, and every problem names the file.
// Seeds: every testdata config and the shipped example.
// Run: go test ./plan -run '^$' -fuzz FuzzParse -fuzztime 60s
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.yaml")
	seeds = append(seeds, "../config.example.yaml")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("apiVersion: dynwatch/v1alpha1\nactions: [{name: o, log: {}}]\nrules: [{name: r, resources: [{kind: X}], actions: [o], when: [{path: a, op: matches, value: '\\Qfoo'}]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yaml", data)
		if err == nil {
			if file == nil || len(file.Rules) == 0 {
				t.Fatal("a valid file without rules")
			}
			return
		}
		var ps config.Problems
		if !errors.As(err, &ps) {
			t.Fatalf("not Problems: %v", err)
		}
		for _, p := range ps {
			if p.File != "fuzz.yaml" || p.Msg == "" {
				t.Fatalf("problem without file or message: %+v", p)
			}
		}
	})
}

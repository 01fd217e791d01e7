package plan_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/rbac"
)

// FuzzParse feeds the whole loader (schema, rules, actions) arbitrary files:
// it may report problems, never panic, and every problem names the file. A
// file it accepts goes on to `dynwatch rbac`: what that prints must parse as
// YAML and grant list and watch on named resources only (and the Lease rules),
// whatever names the file holds.
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
	f.Add([]byte("apiVersion: dynwatch/v1alpha1\nleaderElection: {namespace: ops, name: l.x}\nactions: [{name: o, log: {}}]\n" +
		"rules: [{name: r, resources: [{group: '', resource: configmaps}, {group: apps, resource: deployments}], namespaces: [a, b], actions: [o]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := plan.Parse("fuzz.yaml", data)
		if err == nil {
			if file == nil || len(file.Rules) == 0 {
				t.Fatal("a valid file without rules")
			}
			checkRBAC(t, file)
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

// checkRBAC prints the RBAC an accepted file needs, as `dynwatch rbac` would
// offline, and checks it: printing never fails and what is printed passes
// rbac.Verify (a YAML parse of every document and a check of every rule).
func checkRBAC(t *testing.T, file *plan.File) {
	grants, err := rbac.Grants(file, nil)
	if err != nil {
		return // a selector needs discovery: nothing is printed
	}
	out := rbac.Output{SA: rbac.ServiceAccount{Namespace: "dynwatch", Name: "dynwatch"}, Source: "fuzz.yaml"}
	if le := file.Config.LeaderElection; le != nil {
		out.Lease = &rbac.ServiceAccount{Namespace: le.Namespace, Name: le.Name}
	}
	var b bytes.Buffer
	if err := rbac.WriteYAML(&b, grants, out); err != nil {
		t.Fatalf("rbac of an accepted file: %v", err)
	}
	if err := rbac.Verify(b.Bytes()); err != nil {
		t.Fatalf("rbac printed more than list and watch: %v\n%s", err, b.String())
	}
}

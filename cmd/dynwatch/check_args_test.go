package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// check takes its file as the argument, as --config, or both when they
// name one file; two different files are a usage error.
func TestCheckFileArgument(t *testing.T) {
	const example = "../../config.example.yaml"
	abs, err := filepath.Abs(example)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", example}, {"check", "--config", example}, {"check", example, "--config", "../dynwatch/" + example}, {"check", example, "--config", abs}} {
		code, stdout, stderr := runCLI(t, args...)
		if code != exitOK || !strings.HasPrefix(stdout, example+": ok: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "check", "../../plan/testdata/invalid-values.yaml"); code != exitUsage || !strings.Contains(stderr, "6 problem(s)") {
		t.Errorf("an invalid file as the argument: exit %d, stderr %q", code, stderr)
	}
	for args, want := range map[string]string{
		"check " + example + " --config other.yaml": "two config files: " + example + " (the argument) and other.yaml (--config): give one",
		"check a.yaml b.yaml":                       "one config file at a time, got 2 arguments",
		"check":                                     "--config FILE is required (or give the file as the argument",
	} {
		code, _, stderr := runCLI(t, strings.Fields(args)...)
		if code != exitUsage || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, want 2 and %q; stderr %q", args, code, want, stderr)
		}
	}
}

// check --cluster prints its verdict once every check has run: the problems
// first, then each rule's resources, the verdict last; never "ok" before a
// FAIL.
func TestCheckClusterVerdictLast(t *testing.T) {
	grantConfigMaps(t)
	code, stdout, _ := runBin(t, "check", "--cluster", "--config", "testdata/access.yaml", "--kubeconfig", cmOnlyKubeconfig(t))
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != exitFailure || strings.Contains(stdout, ": ok") {
		t.Errorf("exit %d, want 1 and no ok:\n%s", code, stdout)
	}
	if !strings.HasPrefix(lines[0], "4 problem(s) against the cluster:") || !strings.HasPrefix(lines[1], "  FAIL: rule secrets-everywhere: secrets.v1 (all namespaces): list DENIED") {
		t.Errorf("the problems do not come first:\n%s", stdout)
	}
	if last := lines[len(lines)-1]; last != "testdata/access.yaml: FAIL: 4 problem(s) against the cluster (listed first); the file itself is valid: 5 rule(s), 1 action(s)" {
		t.Errorf("last line %q, want the verdict", last)
	}
	code, stdout, _ = runBin(t, "check", "--cluster", "--config", "testdata/rbac-exact.yaml", "--kubeconfig", cp.Kubeconfig)
	lines = strings.Split(strings.TrimSpace(stdout), "\n")
	if last := lines[len(lines)-1]; code != exitOK || !strings.HasPrefix(last, "testdata/rbac-exact.yaml: ok:") || strings.Count(stdout, ": ok:") != 1 {
		t.Errorf("all well: exit %d, want 0 and the verdict last, once:\n%s", code, stdout)
	}
}

// run, audit and rbac take the config file as their argument too, as check
// does (a newcomer types dynwatch run rules.yaml).
func TestConfigFileArgument(t *testing.T) {
	const example = "../../config.example.yaml"
	code, stdout, stderr := runCLI(t, "rbac", example)
	if code != exitOK || !strings.Contains(stdout, "kind: ClusterRole") {
		t.Errorf("rbac FILE: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	for args, want := range map[string]string{
		"run":                 "--config FILE is required (or give the file as the argument: dynwatch run FILE)",
		"audit a.yaml b.yaml": "one config file at a time, got 2 arguments",
		"rbac " + example + " --config other.yaml":    "two config files: " + example + " (the argument) and other.yaml (--config): give one",
		"run ../../plan/testdata/invalid-values.yaml": "6 problem(s)",
	} {
		code, _, stderr := runCLI(t, strings.Fields(args)...)
		if code != exitUsage || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, want 2 and %q; stderr %q", args, code, want, stderr)
		}
	}
}

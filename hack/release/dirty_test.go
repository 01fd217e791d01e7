package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A release from a checkout with changes is refused before anything is
// written (dist/ keeps what it had), saying what to do; allowed, its commit
// says -dirty. A checkout without changes is released at its HEAD.
func TestReleaseOfACheckoutWithChanges(t *testing.T) {
	root := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("init", "-q")
	write("main.go", "package main\n")
	run("add", "main.go")
	run("commit", "-q", "-m", "one")
	short := run("rev-parse", "--short", "HEAD")
	if _, got, err := releaseCommit(t.Context(), root, false); err != nil || got != short {
		t.Fatalf("a checkout without changes: commit %q (%v), want %s", got, err, short)
	}

	for _, change := range []string{"main.go", "new.go"} { // a tracked file changed, a file not tracked
		write(change, "package main\n\nfunc init() {}\n")
		dist := t.TempDir()
		keep := filepath.Join(dist, "kept")
		if err := os.WriteFile(keep, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := build(t.Context(), options{version: "v1.2.3", dist: dist, root: root})
		if err == nil || !strings.Contains(err.Error(), "commit or stash them") || !strings.Contains(err.Error(), "ALLOW_DIRTY=1") {
			t.Errorf("%s changed: the release says %v, want it refused saying what to do", change, err)
		}
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("%s changed: the refused release emptied dist: %v", change, err)
		}
		if _, got, err := releaseCommit(t.Context(), root, true); err != nil || got != short+"-dirty" {
			t.Errorf("%s changed, allowed: commit %q (%v), want %s-dirty", change, got, err, short)
		}
		run("checkout", "-q", ".")
		run("clean", "-qfd")
	}
}

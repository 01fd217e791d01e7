package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// KUBECONFIG naming a file that does not exist is said as such: client-go
// then reads no other file (not ~/.kube/config, even when it exists), so an
// error that lists ~/.kube/config among what was looked at would send the
// user to a file that is there.
func TestKubeconfigEnvMissingFile(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".kube", "config"), []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(home, "no-such-kubeconfig")
	cmd := exec.Command(bin, "resources")
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "KUBECONFIG=" + missing}
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState == nil {
		t.Fatal("did not run")
	}
	s := string(out)
	want := "no cluster to talk to: KUBECONFIG names " + missing + ", which does not exist (with KUBECONFIG set, ~/.kube/config is not read); set KUBECONFIG to the file kubectl uses, or give --kubeconfig FILE"
	if cmd.ProcessState.ExitCode() != exitFailure || !strings.Contains(s, want) || strings.Count(s, "\n") != 1 {
		t.Errorf("exit %d, want 1 and one line:\n%s\nwant it to say:\n%s", cmd.ProcessState.ExitCode(), s, want)
	}
}

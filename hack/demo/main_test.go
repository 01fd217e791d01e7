package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// make demo, stopped as a terminal's Ctrl-C stops it (SIGINT to its whole
// process group), ends after dynwatch's clean stop with the demo's exit 0,
// not make's "Error 1"; before that it has printed three things to try with
// its kubeconfig and flipped a widget's status.phase through the status
// subresource.
func TestMakeDemoCtrlC(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bins, err := filepath.Rel(root, testenv.BinDir())
	if err != nil {
		t.Fatal(err)
	}
	// A short interval: the demo goes on changing objects past the 30 changes
	// (90 s at its usual pace) it once stopped after, until Ctrl-C.
	cmd := exec.Command("make", "--no-print-directory", "demo", "TESTENV="+bins, "DEMO_FLAGS=--interval=100ms")
	cmd.Dir = root
	stderr := &testenv.Buffer{}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a group of its own, as a terminal's job
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(stderr.String(), "change 31:") {
		if time.Now().After(deadline) {
			t.Fatalf("the demo did not make its changes:\n%s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	s := stderr.String()
	for _, want := range []string{"Three things to try", "bin/dynwatch tail widgets -n demo --where 'status.phase == Ready'", "--kubeconfig " + string(os.PathSeparator),
		"change 2: flip widget large's status.phase to Ready"} {
		if !strings.Contains(s, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "done changing objects") {
		t.Errorf("the demo stopped changing objects before Ctrl-C:\n%s", s)
	}
	if strings.Contains(s, "failed") {
		t.Errorf("a change failed:\n%s", s)
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done: // make, interrupted, ends by the same signal: what matters is what it said
	case <-time.After(60 * time.Second):
		t.Fatalf("make demo did not stop after Ctrl-C:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "make: ***") {
		t.Errorf("make reports an error after Ctrl-C:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "dynwatch stopped cleanly") {
		t.Errorf("no clean stop:\n%s", stderr.String())
	}
}

package action

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/config"
)

// A command that exits 0 well within its timeout is a success even when the
// child it left in the background holds stdout for longer than the timeout
// (os/exec then waits WaitDelay past the exit): not "timed out (process group
// killed)", which it was not.
func TestExecZeroExitWithinTimeoutIsASuccessWhateverItsChildHolds(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	timeout := config.Duration(300 * time.Millisecond)
	x := NewExec(&config.ExecSpec{
		Command: []string{"/bin/sh", "-c", `sleep 30 & echo $! > "$0"; exit 0`, pidFile},
		Timeout: &timeout,
	})
	t.Cleanup(func() {
		if raw, err := os.ReadFile(pidFile); err == nil {
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(raw))); pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	start := time.Now()
	err := x.Send(context.Background(), delivery("o", 1))
	if err != nil {
		t.Errorf("Send = %v after %s, want a success: the command exited 0 at once", err, time.Since(start).Round(time.Millisecond))
	}
	raw, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if pid, _ := strconv.Atoi(strings.TrimSpace(string(raw))); pid <= 0 || syscall.Kill(pid, 0) != nil {
		t.Errorf("the background child %q is gone: the scene did not hold", raw)
	}
}

// A command that exits non-zero on its own, before its timeout, is a failure
// that says its exit status, even when its background child held stdout until
// after the timeout: not "timed out (process group killed)".
func TestExecNonZeroExitWithABackgroundChildSaysItsExitStatus(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	timeout := config.Duration(300 * time.Millisecond)
	x := NewExec(&config.ExecSpec{
		Command: []string{"/bin/sh", "-c", `sleep 30 & echo $! > "$0"; echo no such thing >&2; exit 4`, pidFile},
		Timeout: &timeout,
	})
	t.Cleanup(func() {
		if raw, err := os.ReadFile(pidFile); err == nil {
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(raw))); pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	err := x.Send(context.Background(), delivery("o", 1))
	var f *Failure
	if !errors.As(err, &f) || !f.OneEvent {
		t.Fatalf("Send = %v, want a failure of this event", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "exit status 4") || !strings.Contains(msg, "no such thing") || strings.Contains(msg, "timed out") {
		t.Errorf("error = %q, want the exit status and the output, not a timeout", msg)
	}
}

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

// A command that exits 0 but leaves a child in the background holding its
// stdout is a success, delivered once: not a failure retried retry.max times.
func TestExecBackgroundChildHoldingStdoutIsASuccess(t *testing.T) {
	x, out := execAction(t, "background", "10s")
	var logs logBuffer
	q := NewQueue("x", x, QueueOptions{Retry: Retry{Max: 2, Initial: time.Millisecond, MaxBackoff: time.Millisecond}, Logger: logs.logger()})
	runQueue(t, q)
	q.Enqueue(delivery("o", 1))
	waitFor(t, "the delivery", 20*time.Second, func() bool { st := q.Stats(); return st.Delivered+st.Failed > 0 })
	if raw, err := os.ReadFile(out); err == nil {
		if pid, _ := strconv.Atoi(string(raw)); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
	}
	if st := q.Stats(); st.Delivered != 1 || st.Failed != 0 || st.Retries != 0 {
		t.Errorf("stats = %+v, want one delivery, no retry, no failure\n%s", st, logs.String())
	}
}

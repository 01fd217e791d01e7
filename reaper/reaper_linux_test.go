package reaper

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/internal/testos"
)

// TestHelperInit is not a test: TestInitReapsOrphans runs the test binary as
// PID 1 of a new PID namespace with REAPER_DIR set. There it does what main
// does, Init first; the child Init starts runs the commands, as dynwatch's exec
// action would.
func TestHelperInit(t *testing.T) {
	dir := os.Getenv("REAPER_DIR")
	if dir == "" {
		t.Skip("only runs as a helper process")
	}
	if code, ok := Init(); ok {
		os.Exit(code)
	}
	os.Exit(helperChild(dir))
}

// helperChild orphans a grandchild, checks that os/exec still gets its
// commands' exit statuses, and exits 7 on SIGTERM.
func helperChild(dir string) int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fail := func(format string, args ...any) int {
		_ = os.WriteFile(filepath.Join(dir, "failed"), fmt.Appendf(nil, format, args...), 0o600)
		return 1
	}
	// The subshell outlives sh: it is orphaned, then exits.
	orphaning := exec.Command("/bin/sh", "-c", `(sleep 0.2; : > "$1/orphan-exited") & exit 0`, "sh", dir)
	if err := orphaning.Run(); err != nil {
		return fail("the orphaning command: %v", err)
	}
	var exit *exec.ExitError
	if err := exec.Command("/bin/sh", "-c", "exit 3").Run(); !errors.As(err, &exit) || exit.ExitCode() != 3 {
		return fail("exit 3 seen as %v", err)
	}
	_ = os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(os.Getpid())), 0o600)
	<-term
	return 7
}

// Run as PID 1 of a PID namespace, Init reaps the grandchild a command
// orphaned (no zombie is left under it), os/exec in its child still sees the
// exit statuses of its commands, and a SIGTERM to PID 1 reaches the child,
// whose exit code PID 1 exits with.
func TestInitReapsOrphans(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperInit$")
	cmd.Env = append(os.Environ(), "REAPER_DIR="+dir)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skip("no new PID namespace without CAP_SYS_ADMIN:", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(t, "the grandchild to be orphaned and exit", func() bool {
		if b, err := os.ReadFile(filepath.Join(dir, "failed")); err == nil {
			t.Fatalf("the helper failed: %s", b)
		}
		return exists(filepath.Join(dir, "orphan-exited")) && exists(filepath.Join(dir, "pid"))
	})
	waitFor(t, "no zombie in the namespace", func() bool { return len(testos.ZombiesUnder(cmd.Process.Pid)) == 0 })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Errorf("PID 1 exited with %v, want the child's exit status 7", err)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 10s waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

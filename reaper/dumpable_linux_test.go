package reaper

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// nobody is the user the dumpable test runs the init as: a user without
// CAP_SYS_PTRACE, as in the shipped image, whom the kernel holds to the
// dumpable flag.
const nobody = 65534

func TestHelperDumpable(t *testing.T) {
	dir := os.Getenv("REAPER_DUMPABLE_DIR")
	if dir == "" {
		t.Skip("only runs as a helper process")
	}
	if code, ok := Init(); ok {
		os.Exit(code)
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	_ = os.WriteFile(filepath.Join(dir, "child"), []byte(strconv.Itoa(os.Getpid())), 0o644)
	<-term
	os.Exit(0)
}

// The init that PID 1 runs is not dumpable: the environment it holds (the
// secrets of the config's ${VAR}s, as dynwatch's own) is not readable by a
// command of the same user, which could otherwise read /proc/1/environ.
func TestInitIsNotDumpable(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the init as another user in a PID namespace of its own")
	}
	dir, err := os.MkdirTemp("", "reaper-dumpable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The test binary, where the other user can run it (go test's build
	// directory is the test user's alone), and a directory it can write.
	exe := filepath.Join(dir, "reaper.test")
	copyFile(t, os.Args[0], exe, 0o755)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	cmd, err := startCopied(func() *exec.Cmd {
		cmd := exec.Command(exe, "-test.run=^TestHelperDumpable$")
		cmd.Env = append(os.Environ(), "REAPER_DUMPABLE_DIR="+dir, "REAPER_SECRET=s3cret-of-pid-1")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		return cmd
	})
	if err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skip("no new PID namespace without CAP_SYS_ADMIN:", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(t, "the child to start", func() bool { return exists(filepath.Join(dir, "child")) })
	environ := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/environ"
	var st syscall.Stat_t
	if err := syscall.Stat(environ, &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != 0 {
		t.Errorf("%s belongs to uid %d: the init is dumpable, its environment readable by its user", environ, st.Uid)
	}
	read := exec.Command("/bin/cat", environ)
	read.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if out, err := read.CombinedOutput(); err == nil {
		t.Errorf("a process of the init's user read its environment (%d bytes)", len(out))
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the init exited with %v, want the child's 0", err)
	}
}

// startCopied starts the command newCmd makes, again while its executable,
// just written, is "text file busy": a process that another test forked
// meanwhile holds the file open for writing until it execs (the fork copies
// the descriptor table; close-on-exec closes it only at the exec).
func startCopied(newCmd func() *exec.Cmd) (*exec.Cmd, error) {
	for i := 0; ; i++ {
		cmd := newCmd()
		err := cmd.Start()
		if err == nil || !errors.Is(err, syscall.ETXTBSY) || i == 100 {
			return cmd, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

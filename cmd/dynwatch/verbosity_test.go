package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// binUntil runs the binary with env added to the environment until its
// stderr holds until, then stops it with SIGINT; it returns its stderr.
func binUntil(t *testing.T, env []string, until string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut testenv.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	testenv.WaitFor(t, until, 30*time.Second, func() bool {
		select {
		case <-exited:
			return true
		default:
		}
		return strings.Contains(errOut.String(), until)
	})
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("%v did not stop on SIGINT", args)
	}
	if !strings.Contains(errOut.String(), until) {
		t.Fatalf("%v exited before %q; stderr:\n%s", args, until, errOut.String())
	}
	return errOut.String()
}

// oddLevel is a log level slog gives a klog V(n) line passed on as it is.
var oddLevel = regexp.MustCompile(`level=(DEBUG|INFO)[+-][0-9]`)

// -v shows dynwatch's own lines without client-go's (its V(n) lines read
// DEBUG+2 and the like); from -v=6 on, client-go's requests are shown too,
// as debug lines, as kubectl -v=6 shows them.
func TestVerbosityLeavesClientGoOutUntilAsked(t *testing.T) {
	_, ns := setupTail(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(`apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules: [{name: r, resources: [{group: "", resource: configmaps}], namespaces: [`+ns+`], actions: [out]}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, until string
		args        []string
		debug       bool // dynwatch logs debug lines of its own
	}{
		{"run -v", "all informers synced", []string{"run", "--config", cfg, "--kubeconfig", cp.Kubeconfig, "-v"}, true},
		{"tail -v=2", "msg=following", []string{"tail", "cm", "-n", ns, "--kubeconfig", cp.Kubeconfig, "-v=2"}, false},
	} {
		s := binUntil(t, nil, tc.until, tc.args...)
		if oddLevel.MatchString(s) || strings.Contains(s, "verb=GET") || (tc.debug && !strings.Contains(s, "level=DEBUG")) {
			t.Errorf("%s: want dynwatch's own lines and no client-go line:\n%s", tc.name, s)
		}
	}
	s := binUntil(t, nil, "msg=following", "tail", "cm", "-n", ns, "--kubeconfig", cp.Kubeconfig, "-v=6")
	if oddLevel.MatchString(s) || !regexp.MustCompile(`level=DEBUG .*verb=GET url=\S+/api/v1/namespaces/`+ns+`/configmaps`).MatchString(s) {
		t.Errorf("-v=6: want client-go's requests as debug lines:\n%s", s)
	}
}

// Without a kubeconfig, the error says how to point dynwatch at a cluster,
// in its own words: client-go's hint about KUBERNETES_MASTER, which dynwatch
// does not read, never reaches the user.
func TestNoKubeconfigSaysWhatToDo(t *testing.T) {
	home := t.TempDir()
	for _, args := range [][]string{{"tail", "cm"}, {"resources"}, {"tail", "cm", "-v=8"}} {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil {
			t.Fatal(err)
		}
		s := string(out)
		if cmd.ProcessState.ExitCode() != exitFailure || strings.Contains(s, "KUBERNETES_MASTER") || strings.Contains(s, "--master") ||
			!strings.Contains(s, "no kubeconfig found (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not running in a pod; give --kubeconfig FILE or set KUBECONFIG") ||
			strings.Count(s, "\n") != 1 {
			t.Errorf("%v: exit %d, want 1 and one line saying what to do:\n%s", args, cmd.ProcessState.ExitCode(), s)
		}
	}
}

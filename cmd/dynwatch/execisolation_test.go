package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// nobody is the user the isolation test runs dynwatch as: not root, so
// without CAP_SYS_PTRACE, as the shipped image runs it (65532 there).
const nobody = 65534

// A command an exec action runs shares dynwatch's user, yet cannot read
// dynwatch's environment (/proc/$PPID/environ: the secrets of the config's
// ${VAR}s): run makes itself non-dumpable. Reading its own /proc files
// still works: /metrics has the process collector's series.
func TestExecCannotReadDynwatchsEnvironment(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run dynwatch as another user")
	}
	d, ns := clustersNamespace(t)
	// A directory the other user can read and write, with the binary and a
	// kubeconfig it can read (the test's own are the test user's alone).
	dir, err := os.MkdirTemp("", "dw-isolation-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "dynwatch")
	copyMode(t, bin, exe, 0o755)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	copyMode(t, cp.Kubeconfig, kubeconfig, 0o644)
	script := leakScript(t, dir, "readparent.sh", `out="$OUT/$DYNWATCH_NAME"
cat /proc/$PPID/comm > "$out.parent"
if cat /proc/$PPID/environ > "$out.environ" 2> "$out.err"; then echo read > "$out.result"; else echo refused > "$out.result"; fi
`)
	opsPort := freeLoopbackPort(t)
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `apiVersion: dynwatch/v1alpha1
server: {address: "127.0.0.1:%d"}
actions:
  - name: out
    log: {}
  - name: read-parent
    exec: {command: [%q], env: {OUT: %q}}
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [out, read-parent]}]
`, opsPort, script, dir, ns), 0o644); err != nil {
		t.Fatal(err)
	}
	const secret = "ISOLATION-S3CRET-9c1e"
	run := startProcWith(t, func(c *exec.Cmd) {
		c.Path, c.Args[0] = exe, exe
		c.Env = append(os.Environ(), "HOME="+dir, "DW_ISOLATION_SECRET="+secret)
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}, "run", "--config", cfg, "--kubeconfig", kubeconfig, "--log-level", "debug")
	run.waitLog("serving /metrics", 30*time.Second)
	run.waitLog("all informers synced", 30*time.Second)
	if _, err := d.Resource(cmResource).Namespace(ns).Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "probe"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	result := filepath.Join(dir, "probe.result")
	deadline := time.Now().Add(30 * time.Second)
	for !fileExists(result) {
		if time.Now().After(deadline) {
			t.Fatalf("the command did not run:\n%s", run.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the script writes result last, then exits
	if parent := strings.TrimSpace(readText(t, filepath.Join(dir, "probe.parent"))); parent != "dynwatch" {
		t.Fatalf("the command's parent is %q, not dynwatch", parent)
	}
	if got := strings.TrimSpace(readText(t, result)); got != "refused" {
		t.Errorf("a command read dynwatch's environment (%s), %d bytes, secret in it: %v", got,
			len(readText(t, filepath.Join(dir, "probe.environ"))), strings.Contains(readText(t, filepath.Join(dir, "probe.environ")), secret))
	} else if e := readText(t, filepath.Join(dir, "probe.err")); !strings.Contains(e, "Permission denied") {
		t.Errorf("the read failed otherwise: %s", e)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", opsPort))
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The process collector reads /proc/self/stat, fd, limits and status:
	// a non-dumpable process still reads its own.
	for _, series := range []string{"process_open_fds ", "process_resident_memory_bytes ", "process_max_fds ", "process_cpu_seconds_total ", "process_network_receive_bytes_total "} {
		if !strings.Contains(string(metrics), "\n"+series) {
			t.Errorf("/metrics has no %s", series)
		}
	}
	if err := run.stop(syscall.SIGTERM); err != nil {
		t.Errorf("run: %v\n%s", err, run.stderr.String())
	}
}

func copyMode(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

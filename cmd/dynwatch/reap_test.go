package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynwatch/dynwatch/internal/testos"
)

// dynwatch run as PID 1 of a PID namespace, as in the FROM scratch image:
// the grandchildren its exec commands orphan are reaped (no zombie is left
// in the namespace), every event is still delivered once (os/exec sees each
// command's exit), and SIGTERM to PID 1 stops dynwatch cleanly.
func TestRunAsPID1ReapsOrphans(t *testing.T) {
	d, ns := setupTail(t)
	dir := t.TempDir()
	marks := filepath.Join(dir, "marks")
	if err := os.Mkdir(marks, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, dir, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
actions:
  - name: orphaning
    exec:
      # The subshell outlives sh: orphaned, it exits a moment later.
      command: [/bin/sh, -c, '(sleep 0.2; : > "$MARKS/$DYNWATCH_NAME") & exit 0']
      env: {MARKS: %s}
      retry: {max: 0}
  - {name: out, log: {}}
rules: [{name: all, resources: [{group: tail.example.com, resource: gadgets}], namespaces: [%s], actions: [orphaning, out]}]
`, marks, ns))
	p := startProcWith(t, func(c *exec.Cmd) {
		c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	}, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	p.waitLog("all informers synced", 30*time.Second)
	const n = 5
	for i := range n {
		if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, fmt.Sprint("g", i), nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		entries, _ := os.ReadDir(marks)
		if len(entries) == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d orphans exited:\n%s", len(entries), n, p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	deadline = time.Now().Add(10 * time.Second)
	for z := testos.ZombiesUnder(p.cmd.Process.Pid); len(z) > 0; z = testos.ZombiesUnder(p.cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("zombies left in dynwatch's PID namespace after 10s: %v", z)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Errorf("SIGTERM to PID 1: %v\n%s", err, p.stderr.String())
	}
	if logs := p.stderr.String(); strings.Contains(logs, "delivery failed") || strings.Contains(logs, "action failing") || len(p.payloads()) != n {
		t.Errorf("%d payloads logged, want %d; logs:\n%s", len(p.payloads()), n, logs)
	}
}

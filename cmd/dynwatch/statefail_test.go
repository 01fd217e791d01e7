//go:build linux

package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// limitFileSize sets the soft RLIMIT_FSIZE of process pid to cur (its own
// writes past cur then fail with EFBIG: the Go runtime ignores SIGXFSZ), as a
// full disk would for its state file.
func limitFileSize(t *testing.T, pid int, cur uint64) {
	t.Helper()
	var old syscall.Rlimit
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, 0, uintptr(unsafe.Pointer(&old)), 0, 0); e != 0 {
		t.Fatalf("prlimit: %v", e)
	}
	lim := syscall.Rlimit{Cur: cur, Max: old.Max}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0); e != 0 {
		t.Fatalf("prlimit: %v", e)
	}
}

// While the state file refuses commits, /readyz fails and says so and the
// refusals are counted; once the disk recovers, the event waiting in memory
// is delivered and /readyz is ok again.
func TestReadyzWhileStateRefusesCommits(t *testing.T) {
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := fmt.Sprintf("statefail-%d", time.Now().UnixNano()%1000000)
	if _, err := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(t.Context(),
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	cfg := writeConfig(t, dir, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
server: {address: "127.0.0.1:0"}
actions: [{name: out, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [out]}]
`, db, ns))
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	p.waitLog("state: baseline recorded", 30*time.Second)
	base := "http://" + servedAddr(p)
	testenv.WaitFor(t, "/readyz ok", 20*time.Second, func() bool { code, _ := get(t, base+"/readyz"); return code == http.StatusOK })
	fi, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	limitFileSize(t, p.cmd.Process.Pid, uint64(fi.Size()))
	big := strings.Repeat("x", 300<<10) // its delivery cannot fit in the file as it is
	if _, err := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns).Create(t.Context(),
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "big"}, "data": map[string]any{"v": big}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "/readyz to say the state file refuses commits", 20*time.Second, func() bool {
		code, body := get(t, base+"/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "not ready: state: the state file refuses commits") && strings.Contains(body, "file too large")
	})
	if _, metrics := get(t, base+"/metrics"); !strings.Contains(metrics, "dynwatch_state_commit_failures_total ") || strings.Contains(metrics, "dynwatch_state_commit_failures_total 0\n") {
		t.Errorf("refusals not counted:\n%s", metrics)
	}
	if !strings.Contains(p.stderr.String(), "refuses commits") {
		t.Errorf("no log of the refusal:\n%s", p.stderr.String())
	}
	if n := len(p.payloads()); n != 0 {
		t.Errorf("%d deliveries while nothing can be committed", n)
	}

	limitFileSize(t, p.cmd.Process.Pid, ^uint64(0)) // the disk recovers
	testenv.WaitFor(t, "the event and /readyz ok", 20*time.Second, func() bool {
		code, _ := get(t, base+"/readyz")
		return code == http.StatusOK && len(p.payloads()) == 1
	})
	if pl := p.payloads()[0]; pl.Name != "big" || pl.Type != "add" {
		t.Errorf("delivered %+v, want the add of big", pl)
	}
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Errorf("stop: %v\n%s", err, p.stderr.String())
	}
}

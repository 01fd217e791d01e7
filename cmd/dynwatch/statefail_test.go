//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
	"github.com/dynwatch/dynwatch/internal/testos"
)

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
	testos.LimitProcFileSize(t, p.cmd.Process.Pid, uint64(fi.Size()))
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

	testos.LimitProcFileSize(t, p.cmd.Process.Pid, ^uint64(0)) // the disk recovers
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

// statefailRun starts `dynwatch run` with state on a namespace of its own and
// a log action, and returns the process, the state file, the config and the
// ConfigMaps of the namespace.
func statefailRun(t *testing.T) (p *proc, db, cfg string, cms dynamic.ResourceInterface) {
	t.Helper()
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := fmt.Sprintf("statebound-%d", time.Now().UnixNano()%1000000)
	if _, err := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(t.Context(),
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db = filepath.Join(dir, "state.db")
	cfg = writeConfig(t, dir, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions: [{name: out, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [out]}]
`, db, ns))
	p = startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	p.waitLog("state: baseline recorded", 30*time.Second)
	return p, db, cfg, d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
}

// putData creates (rv "") or updates the ConfigMap name with data.v = v and
// returns its new resourceVersion.
func putData(t *testing.T, cms dynamic.ResourceInterface, name, v string) string {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}, "data": map[string]any{"v": v}}}
	old, err := cms.Get(t.Context(), name, metav1.GetOptions{})
	if err == nil {
		u.SetResourceVersion(old.GetResourceVersion())
		u, err = cms.Update(t.Context(), u, metav1.UpdateOptions{})
	} else {
		u, err = cms.Create(t.Context(), u, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	return u.GetResourceVersion()
}

// dataOf returns data.v of a payload's object.
func dataOf(t *testing.T, pl event.Payload) string {
	t.Helper()
	var o struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal(pl.Object, &o); err != nil {
		t.Fatal(err)
	}
	return o.Data["v"]
}

// While the state file refuses commits, what waits in memory is bounded (64
// MiB by default): past it, dynwatch stops by itself with one ERROR that says
// why and exits 1 (events neither delivered nor on disk), rather than grow.
// The next start, the disk recovered, compares the listed objects with the
// records on disk: the change fires as one replayed update to the last
// content (the versions in between are not kept).
func TestRunStopsWhenTooMuchWaitsForTheStateFile(t *testing.T) {
	p, db, cfg, cms := statefailRun(t)
	putData(t, cms, "a", "small")
	testenv.WaitFor(t, "the add", 20*time.Second, func() bool { return len(p.payloads()) == 1 })
	fi, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	testos.LimitProcFileSize(t, p.cmd.Process.Pid, uint64(fi.Size()))
	// Each update holds its object and the old one: about 1.8 MB.
	var last string
	for i := 0; !strings.Contains(p.stderr.String(), "wait in memory; stopping"); i++ {
		if i == 80 { // 140 MB: more than twice the bound
			t.Fatalf("dynwatch did not stop at its bound:\n%s", p.stderr.String())
		}
		last = fmt.Sprintf("%03d%s", i, strings.Repeat("x", 900<<10))
		putData(t, cms, "a", last)
	}
	code := exitCode(p.wait(40*time.Second, "its bound"))
	logs := p.stderr.String()
	if code != 1 {
		t.Errorf("exit %d after the bound, want 1:\n%s", code, logs)
	}
	if !strings.Contains(logs, "the state file has refused commits for ") || !strings.Contains(logs, "the next start compares the listed objects with the records on disk, so every change since the last commit fires as a replay") {
		t.Errorf("no ERROR saying why it stopped:\n%s", logs)
	}
	if n := strings.Count(logs, "level=ERROR"); n > 5 {
		t.Errorf("%d ERROR lines, want a few, not one per event:\n%s", n, logs)
	}
	if n := len(p.payloads()); n != 1 {
		t.Errorf("%d deliveries while nothing could be committed, want 1 (the add)", n)
	}

	p2 := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig) // the disk recovered
	testenv.WaitFor(t, "the replayed update", 30*time.Second, func() bool { return len(p2.payloads()) >= 1 })
	p2.waitLog("state: compared with the records", 20*time.Second)
	got := p2.payloads()
	if len(got) != 1 || got[0].Type != "update" || !got[0].Replay || dataOf(t, got[0]) != last {
		t.Errorf("next start: %d deliveries (%+v), want one replayed update to the last content", len(got), got)
	}
	p2.stopOK(syscall.SIGTERM)
}

// A stop while the state file refuses commits ends with the events not
// written: one ERROR gives their count (not a line per event), `run` exits 1,
// and the next start replays them from the comparison with the records.
func TestRunStoppedWhileCommitsFailExitsOne(t *testing.T) {
	p, db, cfg, cms := statefailRun(t)
	fi, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	testos.LimitProcFileSize(t, p.cmd.Process.Pid, uint64(fi.Size()))
	big := strings.Repeat("x", 300<<10) // its delivery cannot fit in the file as it is
	for i := range 5 {
		putData(t, cms, fmt.Sprintf("c%d", i), big)
	}
	p.waitLog("refuses commits", 20*time.Second)
	code := exitCode(p.stop(syscall.SIGTERM))
	logs := p.stderr.String()
	if code != 1 {
		t.Errorf("exit %d after a stop with events not written, want 1:\n%s", code, logs)
	}
	if n := strings.Count(logs, "what=events notWritten="); n != 1 || strings.Contains(logs, "event not recorded") {
		t.Errorf("want one line with the count of events not written, none per event:\n%s", logs)
	}

	p2 := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	p2.waitLog("state: compared with the records", 30*time.Second)
	testenv.WaitFor(t, "the five replayed adds", 20*time.Second, func() bool { return len(p2.payloads()) >= 5 })
	for _, pl := range p2.payloads() {
		if pl.Type != "add" || !pl.Replay {
			t.Errorf("next start delivered %s of %s (replay %v), want replayed adds", pl.Type, pl.Name, pl.Replay)
		}
	}
	p2.stopOK(syscall.SIGTERM)
}

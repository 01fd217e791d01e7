package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// proc is a real dynwatch process.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    []event.Payload
	stderr testenv.Buffer
	exited chan error
}

func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	return startProcWith(t, func(*exec.Cmd) {}, args...)
}

// startProcWith is startProc with a change to the command before it starts.
func startProcWith(t *testing.T, change func(*exec.Cmd), args ...string) *proc {
	t.Helper()
	p := &proc{t: t, exited: make(chan error, 1)}
	p.cmd = exec.Command(bin, args...)
	change(p.cmd)
	p.cmd.Stderr = &p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<22)
		for sc.Scan() {
			var pl event.Payload
			if err := json.Unmarshal(sc.Bytes(), &pl); err != nil {
				t.Errorf("stdout line is not a payload: %s", sc.Text())
				continue
			}
			p.mu.Lock()
			p.out = append(p.out, pl)
			p.mu.Unlock()
		}
		close(lines)
	}()
	go func() { err := p.cmd.Wait(); <-lines; p.exited <- err }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	return p
}

func (p *proc) payloads() []event.Payload {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.out)
}

func (p *proc) waitLog(what string, timeout time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.stderr.String(), what) {
		select {
		case err := <-p.exited:
			p.t.Fatalf("dynwatch exited (%v) before logging %q:\n%s", err, what, p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no %q after %s:\n%s", what, timeout, p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends sig and waits for the exit.
func (p *proc) stop(sig syscall.Signal) error {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %s: %v", sig, err)
	}
	return p.wait(40*time.Second, sig.String())
}

// wait waits for the exit, at most timeout after what.
func (p *proc) wait(timeout time.Duration, what string) error {
	p.t.Helper()
	select {
	case err := <-p.exited:
		return err
	case <-time.After(timeout):
		p.t.Fatalf("dynwatch still running %s after %s:\n%s", timeout, what, p.stderr.String())
		return nil
	}
}

// stopOK sends sig and requires exit 0: a stop with every event delivered or
// kept on disk.
func (p *proc) stopOK(sig syscall.Signal) {
	p.t.Helper()
	if err := p.stop(sig); err != nil {
		p.t.Errorf("dynwatch exited with %v after %s, want exit 0:\n%s", err, sig, p.stderr.String())
	}
}

func writeConfig(t *testing.T, dir, content string) string {
	t.Helper()
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// addAndBump creates gadgets k0 to k<n-1> in ns with n 0, and sets each
// one's n to 1 after it: two events per gadget.
func addAndBump(t *testing.T, d dynamic.Interface, ns string, n int) {
	t.Helper()
	for i := range n {
		name := fmt.Sprint("k", i)
		if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, name, map[string]any{"n": int64(0)}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		setN(t, d, ns, name, 1)
	}
}

func setN(t *testing.T, d dynamic.Interface, ns, name string, n int64) {
	t.Helper()
	ri := d.Resource(gadgetGVR).Namespace(ns)
	u, err := ri.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, n, "spec", "n")
	if _, err := ri.Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Stopped, one object is updated, one deleted, one created and one left alone:
// the next start fires exactly those three, as replays, and evaluates the update
// against the values recorded before the stop.
func TestRestartReplaysWhatChanged(t *testing.T) {
	d, ns := setupTail(t)
	for _, name := range []string{"keep", "upd", "del"} {
		if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, name, map[string]any{"n": int64(1)}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions: [{name: out, log: {}}]
rules:
  - name: all
    resources: [{group: tail.example.com, resource: gadgets}]
    namespaces: [%[2]s]
    fields: {n: spec.n}
    actions: [out]
  - name: was-one
    resources: [{group: tail.example.com, resource: gadgets}]
    namespaces: [%[2]s]
    on: [update]
    when: [{path: spec.n, object: old, op: eq, value: 1}]
    changed: [spec.n]
    actions: [out]
`, filepath.Join(dir, "state.db"), ns))

	first := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	first.waitLog("state: baseline recorded", 30*time.Second)
	if err := first.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("first run: %v\n%s", err, first.stderr.String())
	}
	if got := first.payloads(); len(got) != 0 {
		t.Fatalf("the first run (a baseline) fired %d events: %+v", len(got), got)
	}

	setN(t, d, ns, "upd", 2)
	if err := d.Resource(gadgetGVR).Namespace(ns).Delete(t.Context(), "del", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, "new", map[string]any{"n": int64(5)}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	second := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	// The log comes once what the diff found is committed and queued, and a
	// SIGTERM drains the queues: after the stop every replay is in the payloads.
	second.waitLog("state: compared with the records", 30*time.Second)
	if err := second.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("second run: %v", err)
	}
	got := map[string]event.Payload{}
	for _, p := range second.payloads() {
		got[p.Rule+"/"+string(p.Type)+"/"+p.Name] = p
		if !p.Replay {
			t.Errorf("not a replay: %+v", p)
		}
	}
	want := []string{"all/add/new", "all/update/upd", "all/delete/del", "was-one/update/upd"}
	if len(got) != len(want) || len(second.payloads()) != len(want) {
		t.Errorf("got %d events %v, want exactly %v", len(second.payloads()), keys(got), want)
	}
	for _, k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("missing %s (got %v)", k, keys(got))
		}
	}
	upd := got["was-one/update/upd"]
	if !slices.Equal(upd.Changed, []string{"spec.n"}) || string(upd.Fields["n"]) != "" {
		t.Errorf("update: changed %v", upd.Changed)
	}
	if n := got["all/update/upd"].Fields["n"]; string(n) != "2" {
		t.Errorf("update fields.n = %s", n)
	}
	if del := got["all/delete/del"]; del.ID == "" || !strings.HasSuffix(del.ID, ":delete") || del.Namespace != ns {
		t.Errorf("delete = %+v", del)
	}

	// Nothing changed since: a third start fires nothing.
	third := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	third.waitLog("state: compared with the records", 30*time.Second)
	third.stopOK(syscall.SIGTERM)
	if n := len(third.payloads()); n != 0 {
		t.Errorf("a restart with nothing changed fired %d events: %+v", n, third.payloads())
	}
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// kill -9 while the receiver is down and events are queued on disk; restarted
// with the receiver up, every event arrives as it was kept (same id and body,
// not a replay re-found by the diff), duplicates allowed.
func TestKillNineLosesNoEvent(t *testing.T) {
	d, ns := setupTail(t)
	recv := newReceiver(t)
	dir := t.TempDir()
	statePath := filepath.Join(dir, "state.db")
	cfg := writeConfig(t, dir, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions:
  - name: hook
    concurrency: 8
    webhook: {url: %q, retry: {max: 1000, initialBackoff: 50ms, maxBackoff: 200ms}}
rules:
  - name: gadgets
    resources: [{group: tail.example.com, resource: gadgets}]
    namespaces: [%s]
    actions: [hook]
`, statePath, recv.srv.URL, ns))
	first := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	first.waitLog("state: baseline recorded", 30*time.Second)
	addAndBump(t, d, ns, 5)
	// The receiver is down: the action probes one event at a time while the
	// others wait on disk. Kill once the file holds all ten.
	var kept []event.Payload
	waitUntil(t, "the action to fail and ten events on disk", 30*time.Second, func() bool {
		kept = pendingOnDisk(t, statePath, "hook")
		return len(kept) == 10 && strings.Contains(first.stderr.String(), "action failing")
	}, first.stderr.String)
	if err := first.stop(syscall.SIGKILL); exitCode(err) != -1 {
		t.Fatalf("kill -9: exit %v", err)
	}
	if got := recv.payloads(); len(got) != 0 {
		t.Fatalf("delivered while the receiver was down: %+v", got)
	}
	recv.mu.Lock()
	before := keys(recv.attempted)
	recv.mu.Unlock()

	recv.up.Store(true)
	second := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	second.waitLog("delivering events left from the last run first", 30*time.Second)
	delivered := func() map[string][]event.Payload {
		m := map[string][]event.Payload{}
		for _, p := range recv.payloads() {
			m[p.ID] = append(m[p.ID], p)
		}
		return m
	}
	waitUntil(t, "the ten kept events delivered", 30*time.Second, func() bool {
		m := delivered()
		for _, k := range kept {
			if len(m[k.ID]) == 0 {
				return false
			}
		}
		return true
	}, second.stderr.String)
	second.stopOK(syscall.SIGTERM)
	got := delivered()
	adds, updates := 0, 0
	for _, k := range kept {
		switch {
		case strings.HasSuffix(k.ID, ":add"):
			adds++
		case strings.HasSuffix(k.ID, ":update"):
			updates++
		}
		for _, p := range got[k.ID] {
			if p.Replay || p.Type != k.Type || p.Name != k.Name || string(p.Object) != string(k.Object) {
				t.Errorf("kept event %s arrived as replay=%v %s %s, want it as it was kept: replay=false %s %s", k.ID, p.Replay, p.Type, p.Name, k.Type, k.Name)
			}
		}
	}
	if adds != 5 || updates != 5 {
		t.Errorf("kept %d adds and %d updates, want 5 and 5: %v", adds, updates, keys(got))
	}
	if len(got) != len(kept) {
		t.Errorf("delivered %d distinct events, want the %d kept: %v", len(got), len(kept), keys(got))
	}
	for _, id := range before {
		if len(got[id]) == 0 {
			t.Errorf("event %s, attempted before the kill, never arrived (ids must be stable)", id)
		}
	}
}

func TestBadStateFile(t *testing.T) {
	dir := t.TempDir()
	statePath := filepath.Join(dir, "state.db")
	if err := os.WriteFile(statePath, []byte(strings.Repeat("garbage!", 2000)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, dir, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions: [{name: out, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [default], actions: [out]}]
`, statePath))
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	err := p.wait(30*time.Second, "start on an unreadable state file")
	if code := exitCode(err); code != exitFailure {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{statePath, "unreadable", "--reset-state"} {
		if !strings.Contains(p.stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, p.stderr.String())
		}
	}

	ok := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig, "--reset-state")
	ok.waitLog("state reset: the old file was unreadable; starting over", 10*time.Second)
	ok.waitLog("all informers synced", 30*time.Second)

	// A second process on the same state file refuses to start.
	second := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	err = second.wait(30*time.Second, "start on a state file in use")
	if code := exitCode(err); code != exitFailure || !strings.Contains(second.stderr.String(), "in use by another dynwatch process") {
		t.Errorf("second process: exit %d\n%s", code, second.stderr.String())
	}
	if err := ok.stop(syscall.SIGTERM); err != nil {
		t.Errorf("stop: %v", err)
	}
	// After a clean stop, --reset-state says how much it drops.
	again := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig, "--reset-state")
	again.waitLog("state reset: starting over", 10*time.Second)
	again.waitLog("objectRecords=", 10*time.Second)
	again.stopOK(syscall.SIGTERM)
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// syncedAfter waits for the "all informers synced" log and returns its duration.
func (p *proc) syncedAfter(timeout time.Duration) time.Duration {
	p.t.Helper()
	p.waitLog("all informers synced", timeout)
	s := p.stderr.String()
	i := strings.Index(s, "all informers synced")
	rest := s[i:]
	j := strings.Index(rest, "after=")
	var d time.Duration
	if j >= 0 {
		f := strings.Fields(rest[j+len("after="):])
		d, _ = time.ParseDuration(f[0])
	}
	return d
}

// 10 000 objects that did not change while dynwatch was down: a restart fires
// nothing. Also measures the startup diff against the plain initial list.
func TestRestartWithTenThousandUnchanged(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 10 000 objects")
	}
	const n = 10_000
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 5000, 10000
	d := dynamic.NewForConfigOrDie(cfg)
	ns := fmt.Sprintf("tenk-%d", time.Now().UnixNano()%1000000)
	if _, err := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(t.Context(),
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				_, err := cms.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": fmt.Sprintf("cm-%05d", i)}, "data": map[string]any{"i": fmt.Sprint(i), "pad": strings.Repeat("x", 200)}}}, metav1.CreateOptions{})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rule := fmt.Sprintf(`actions: [{name: out, log: {}}]
rules:
  - name: cms
    resources: [{group: "", resource: configmaps}]
    namespaces: [%s]
    changed: [data.i]
    fields: {i: data.i}
    actions: [out]
`, ns)
	plainCfg := filepath.Join(dir, "plain.yaml")
	stateCfg := filepath.Join(dir, "state.yaml")
	os.WriteFile(plainCfg, []byte("apiVersion: dynwatch/v1alpha1\n"+rule), 0o600)
	os.WriteFile(stateCfg, []byte(fmt.Sprintf("apiVersion: dynwatch/v1alpha1\nstate: {path: %s}\n", filepath.Join(dir, "state.db"))+rule), 0o600)

	plain := startProc(t, "run", "--config", plainCfg, "--kubeconfig", cp.Kubeconfig)
	plainList := plain.syncedAfter(2 * time.Minute)
	plain.stopOK(syscall.SIGTERM)

	baseline := startProc(t, "run", "--config", stateCfg, "--kubeconfig", cp.Kubeconfig)
	baseline.waitLog("state: baseline recorded", 2*time.Minute)
	baselineList := baseline.syncedAfter(2 * time.Minute)
	baseline.stopOK(syscall.SIGTERM)

	restart := startProc(t, "run", "--config", stateCfg, "--kubeconfig", cp.Kubeconfig)
	restart.waitLog("objects=10000 deletesReplayed=0", 2*time.Minute)
	diffList := restart.syncedAfter(2 * time.Minute)
	restart.stopOK(syscall.SIGTERM)
	if got := restart.payloads(); len(got) != 0 {
		t.Errorf("a restart over %d unchanged objects fired %d events", n, len(got))
	}
	if st, err := os.Stat(filepath.Join(dir, "state.db")); err == nil {
		t.Logf("state file: %d bytes for %d objects", st.Size(), n)
	}
	t.Logf("initial list of %d objects: plain %s; with state, first start (baseline) %s (%.2fx), restart with diff %s (%.2fx)",
		n, plainList, baselineList, float64(baselineList)/float64(plainList), diffList, float64(diffList)/float64(plainList))
}

package main

import (
	"fmt"
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
)

var timedCMs = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// phaseCM writes the ConfigMap name of ns with data.phase set to phase,
// creating it when it does not exist.
func phaseCM(t *testing.T, d dynamic.Interface, ns, name, phase string) {
	t.Helper()
	ri := d.Resource(timedCMs).Namespace(ns)
	u, err := ri.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		u = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name}, "data": map[string]any{"phase": phase}}}
		if _, err := ri.Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	u.Object["data"] = map[string]any{"phase": phase}
	if _, err := ri.Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// timedConfig is a config whose rule failing fires on the ConfigMaps of ns
// whose data.phase is Failed, with the given fire, for and keepFiringFor.
func timedConfig(dir, ns, fire, forDur, keep string) string {
	return fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
server: {address: "127.0.0.1:0"}
actions: [{name: out, log: {}}]
rules:
  - name: failing
    resources: [{group: "", resource: configmaps}]
    namespaces: [%s]
    when: [{path: data.phase, op: eq, value: Failed}]
    fire: %s
    for: %s
    keepFiringFor: %s
    actions: [out]
`, filepath.Join(dir, "state.db"), ns, fire, forDur, keep)
}

// firedFor returns the payloads of the ConfigMap name.
func firedFor(ps []event.Payload, name string) []event.Payload {
	var out []event.Payload
	for _, p := range ps {
		if p.Name == name {
			out = append(out, p)
		}
	}
	return out
}

// waitFired waits until the ConfigMap name has n payloads.
func (p *proc) waitFired(name string, n int, timeout time.Duration) []event.Payload {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := firedFor(p.payloads(), name)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: %d payloads after %s, want %d: %+v\n%s", name, len(got), timeout, n, got, p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func parseTime(t *testing.T, what, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s %q: %v", what, s, err)
	}
	return tm
}

// TestForFiresOnTimeAndNotOnAFlap: enter fires once the conditions have
// held for `for`, with no event in between, and a flap restarts the wait.
func TestForFiresOnTimeAndNotOnAFlap(t *testing.T) {
	t.Parallel() // most of it is waiting
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := testenv.Namespace(t, d)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, timedConfig(dir, ns, "edges", "3s", "0s"))
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	p.waitLog("state: baseline recorded", 30*time.Second)

	start := time.Now()
	phaseCM(t, d, ns, "steady", "Failed")
	phaseCM(t, d, ns, "flappy", "Failed")
	phaseCM(t, d, ns, "doomed", "Failed")
	time.Sleep(1500 * time.Millisecond)
	if err := d.Resource(timedCMs).Namespace(ns).Delete(t.Context(), "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err) // deleted while its wait runs: the wait is cancelled
	}
	phaseCM(t, d, ns, "flappy", "Running") // a flap: the wait starts again
	flapped := time.Now()
	phaseCM(t, d, ns, "flappy", "Failed")

	base := "http://" + servedAddr(p)
	testenv.WaitFor(t, "dynwatch_pending to count steady and flappy", 10*time.Second, func() bool {
		_, m := get(t, base+"/metrics")
		return strings.Contains(m, "\n"+`dynwatch_pending{rule="failing"} 2`+"\n")
	})
	got := p.waitFired("steady", 1, 20*time.Second)
	if got[0].Transition != "enter" || got[0].Since == "" {
		t.Fatalf("steady: %+v, want a timed enter with since", got[0])
	}
	since, at := parseTime(t, "since", got[0].Since), parseTime(t, "time", got[0].Time)
	if at.Sub(since) < 3*time.Second || since.Before(start.Add(-time.Second)) {
		t.Errorf("steady fired at %s, since %s: want at least 3s after since", at, since)
	}
	if got[0].Late {
		t.Errorf("steady: late on a wait that fell due while dynwatch ran")
	}
	flap := p.waitFired("flappy", 1, 20*time.Second)
	if at := parseTime(t, "time", flap[0].Time); at.Before(flapped.Add(3 * time.Second)) {
		t.Errorf("flappy entered at %s, before 3s after its flap at %s: the flap did not restart the wait", at, flapped)
	}
	time.Sleep(time.Second)
	if n := len(firedFor(p.payloads(), "flappy")) + len(firedFor(p.payloads(), "steady")); n != 2 {
		t.Errorf("%d payloads, want one enter each: %+v", n, p.payloads())
	}
	if got := firedFor(p.payloads(), "doomed"); len(got) != 0 {
		t.Errorf("an object deleted while its wait ran fired: %+v", got)
	}
	if _, m := get(t, base+"/metrics"); !strings.Contains(m, "\n"+`dynwatch_firing{rule="failing"} 2`+"\n") ||
		!strings.Contains(m, "\n"+`dynwatch_pending{rule="failing"} 0`+"\n") {
		t.Errorf("after both entered, want 2 firing and 0 pending:\n%s", m)
	}
	p.stopOK(syscall.SIGTERM)
}

// TestKeepFiringForSuppressesABriefRecovery: exit waits keepFiringFor, and
// holding again within it cancels the exit.
func TestKeepFiringForSuppressesABriefRecovery(t *testing.T) {
	t.Parallel() // most of it is waiting
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := testenv.Namespace(t, d)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, timedConfig(dir, ns, "edges", "0s", "3s"))
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	p.waitLog("state: baseline recorded", 30*time.Second)

	phaseCM(t, d, ns, "a", "Failed")
	p.waitFired("a", 1, 20*time.Second) // enter at once: no for
	phaseCM(t, d, ns, "a", "Running")
	time.Sleep(time.Second)
	phaseCM(t, d, ns, "a", "Failed") // back within keepFiringFor: no exit
	time.Sleep(4 * time.Second)
	if got := firedFor(p.payloads(), "a"); len(got) != 1 {
		t.Fatalf("a brief recovery fired: %+v", got)
	}
	recovered := time.Now() // before the write: dynwatch may see it before the write returns
	phaseCM(t, d, ns, "a", "Running")
	got := p.waitFired("a", 2, 20*time.Second)
	if got[1].Transition != "exit" {
		t.Fatalf("second payload %+v, want exit", got[1])
	}
	if at := parseTime(t, "time", got[1].Time); at.Before(recovered.Add(3 * time.Second)) {
		t.Errorf("exit at %s, less than keepFiringFor after the recovery at %s", at, recovered)
	}

	// An entered object deleted exits on its delete, at once.
	phaseCM(t, d, ns, "gone", "Failed")
	p.waitFired("gone", 1, 20*time.Second)
	if err := d.Resource(timedCMs).Namespace(ns).Delete(t.Context(), "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	gone := p.waitFired("gone", 2, 20*time.Second)
	if gone[1].Transition != "exit" || gone[1].Type != event.Delete {
		t.Fatalf("after the delete: %+v, want exit on the delete", gone[1])
	}
	if at := parseTime(t, "time", gone[1].Time); at.After(deleted.Add(2 * time.Second)) {
		t.Errorf("exit on delete at %s, want at once (deleted at %s)", at, deleted)
	}
	p.stopOK(syscall.SIGTERM)
}

// TestWaitSurvivesKill9: a wait kept in the state file neither restarts nor
// goes when dynwatch is killed: restarted before its due time it fires at
// that time; restarted after, it fires at start, late.
func TestWaitSurvivesKill9(t *testing.T) {
	t.Parallel() // most of it is waiting
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := testenv.Namespace(t, d)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, timedConfig(dir, ns, "enter", "6s", "0s"))
	first := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	first.waitLog("state: baseline recorded", 30*time.Second)
	created := time.Now()
	phaseCM(t, d, ns, "soon", "Failed")
	time.Sleep(1500 * time.Millisecond) // its wait is on disk (commits take milliseconds)
	_ = first.cmd.Process.Signal(syscall.SIGKILL)
	if err := first.wait(10*time.Second, "SIGKILL"); err == nil {
		t.Fatal("a killed dynwatch exited 0")
	}

	// Restarted before the due time: enter comes at the original due time.
	second := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	got := second.waitFired("soon", 1, 30*time.Second)
	at, since := parseTime(t, "time", got[0].Time), parseTime(t, "since", got[0].Since)
	if since.Before(created.Add(-time.Second)) || since.After(created.Add(time.Second)) {
		t.Errorf("since %s, want the create's time %s: the wait restarted", since, created)
	}
	// since says the wait did not restart; the time only that it ended
	// no sooner than due (a loaded machine may deliver it late).
	if at.Before(created.Add(6*time.Second)) || at.After(created.Add(14*time.Second)) {
		t.Errorf("entered at %s, want about 6s after %s", at, created)
	}
	if got[0].Late {
		t.Errorf("late set on a wait that fell due while dynwatch ran: %+v", got[0])
	}

	// A second wait, and dynwatch down past its due time: it fires at
	// start, late, with the time it fell due.
	created = time.Now()
	phaseCM(t, d, ns, "late", "Failed")
	time.Sleep(1500 * time.Millisecond)
	_ = second.cmd.Process.Signal(syscall.SIGKILL)
	_ = second.wait(10*time.Second, "SIGKILL")
	time.Sleep(time.Until(created.Add(7 * time.Second)))
	third := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	late := third.waitFired("late", 1, 30*time.Second)
	if !late[0].Late || late[0].Due == "" {
		t.Fatalf("a wait that fell due while dynwatch was down: %+v, want late with due", late[0])
	}
	due := parseTime(t, "due", late[0].Due)
	if due.Before(created.Add(5*time.Second)) || due.After(created.Add(8*time.Second)) {
		t.Errorf("due %s, want about 6s after %s", due, created)
	}
	for _, again := range firedFor(third.payloads(), "soon") {
		if again.ID != got[0].ID { // a redelivery (at least once) keeps its id
			t.Errorf("soon fired anew after the restart: %+v", again)
		}
	}
	third.stopOK(syscall.SIGTERM)
}

// TestWaitSurvivesReloadAndLeaderChange: a reload that keeps the rule keeps
// its wait, and a new leader, on the same state file, fires it at its
// original due time.
func TestWaitSurvivesReloadAndLeaderChange(t *testing.T) {
	t.Parallel() // most of it is waiting
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := testenv.Namespace(t, d)
	dir := t.TempDir()
	config := func(actions string) string {
		return fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
leaderElection: {namespace: %s, name: timed-test, leaseDuration: 4s, renewDeadline: 3s, retryPeriod: 500ms}
actions: [%s]
rules:
  - name: failing
    resources: [{group: "", resource: configmaps}]
    namespaces: [%[2]s]
    when: [{path: data.phase, op: eq, value: Failed}]
    fire: enter
    for: 8s
    actions: [out]
`, filepath.Join(dir, "state.db"), ns, actions)
	}
	cfg := writeConfig(t, dir, config("{name: out, log: {}}"))
	a := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	a.waitLog("this replica leads; acting", 30*time.Second)
	a.waitLog("state: baseline recorded", 30*time.Second)
	b := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	b.waitLog("another replica leads", 30*time.Second)

	created := time.Now()
	phaseCM(t, d, ns, "x", "Failed")
	time.Sleep(time.Second)
	writeConfig(t, dir, config("{name: out, log: {}}, {name: spare, log: {path: "+filepath.Join(dir, "spare.log")+"}}"))
	if err := a.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	a.waitLog("config reloaded", 30*time.Second)
	a.stopOK(syscall.SIGTERM) // releases the Lease: b takes over
	b.waitLog("this replica leads; acting", 30*time.Second)

	got := b.waitFired("x", 1, 30*time.Second)
	since, at := parseTime(t, "since", got[0].Since), parseTime(t, "time", got[0].Time)
	if since.Before(created.Add(-time.Second)) || since.After(created.Add(time.Second)) {
		t.Errorf("since %s, want the first leader's %s: the wait restarted", since, created)
	}
	if at.Before(created.Add(8*time.Second)) || at.After(created.Add(16*time.Second)) {
		t.Errorf("the new leader entered at %s, want about 8s after %s", at, created)
	}
	if n := len(firedFor(a.payloads(), "x")); n != 0 {
		t.Errorf("the first leader fired before the wait ended: %+v", a.payloads())
	}
	b.stopOK(syscall.SIGTERM)
}

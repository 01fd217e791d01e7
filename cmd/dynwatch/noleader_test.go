package main

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// The deploy/deployment variant: replicas on a Lease and no state. A standby
// shows dynwatch_leader 0 and the leader 1; a graceful stop of the leader
// delivers what it had queued before it exits 0; a change made while no
// replica leads (after a kill -9, before the Lease expires) is not replayed
// by the next leader, which delivers what comes after.
func TestLeaderElectionWithoutState(t *testing.T) {
	d, ns := setupTail(t)
	recv := newReceiver(t)
	recv.up.Store(true)
	cfg := writeConfig(t, t.TempDir(), fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
server: {address: "127.0.0.1:0"}
shutdownGrace: 20s
leaderElection: {namespace: %s, name: dynwatch-nostate, leaseDuration: 4s, renewDeadline: 3s, retryPeriod: 500ms}
actions:
  - name: hook
    concurrency: 1
    webhook: {url: %q, retry: {max: 100, initialBackoff: 50ms, maxBackoff: 200ms}}
rules: [{name: all, resources: [{group: tail.example.com, resource: gadgets}], namespaces: [%[1]s], actions: [hook]}]
`, ns, recv.srv.URL))
	create := func(name string) {
		t.Helper()
		if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, name, map[string]any{"n": int64(1)}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	delivered := func(name string) int {
		n := 0
		for _, p := range recv.payloads() {
			if p.Name == name && p.Type == event.Add {
				n++
			}
		}
		return n
	}
	leaderMetric := func(p *proc, addr string) string {
		t.Helper()
		var line string
		testenv.WaitFor(t, "dynwatch_leader in /metrics", 10*time.Second, func() bool {
			code, body := get(t, "http://"+addr+"/metrics")
			for _, l := range strings.Split(body, "\n") {
				if strings.HasPrefix(l, "dynwatch_leader ") {
					line = l
				}
			}
			return code == http.StatusOK && line != ""
		})
		return line
	}

	a := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	aAddr := servedAddr(a)
	a.waitLog("this replica leads; acting", 30*time.Second)
	b := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	bAddr := servedAddr(b)
	b.waitLog("another replica leads", 30*time.Second)
	if got := leaderMetric(b, bAddr); got != "dynwatch_leader 0" {
		t.Errorf("the standby's metric: %q, want dynwatch_leader 0", got)
	}
	if got := leaderMetric(a, aAddr); got != "dynwatch_leader 1" {
		t.Errorf("the leader's metric: %q, want dynwatch_leader 1", got)
	}
	a.waitLog("all informers synced", 30*time.Second)

	// A slow receiver: five events are still queued when the leader is told to stop.
	recv.slow.Store(true)
	for i := range 5 {
		create(fmt.Sprint("drain-", i))
	}
	testenv.WaitFor(t, "the first delivery to start", 20*time.Second, func() bool {
		recv.mu.Lock()
		defer recv.mu.Unlock()
		return len(recv.attempted) > 0
	})
	a.stopOK(syscall.SIGTERM)
	for i := range 5 {
		if n := delivered(fmt.Sprint("drain-", i)); n != 1 {
			t.Errorf("drain-%d delivered %d times before the leader exited, want once", i, n)
		}
	}
	if !strings.Contains(a.stderr.String(), "draining the action's queue before stopping") {
		t.Errorf("the leader did not say it drains:\n%s", a.stderr.String())
	}
	recv.slow.Store(false)
	b.waitLog("this replica leads; acting", 30*time.Second)

	// kill -9: nobody leads until the Lease expires; a change then is missed.
	c := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	c.waitLog("another replica leads", 30*time.Second)
	if err := b.stop(syscall.SIGKILL); exitCode(err) != -1 {
		t.Fatalf("kill -9: exit %v", err)
	}
	create("in-the-gap")
	c.waitLog("this replica leads; acting", 30*time.Second)
	c.waitLog("all informers synced", 30*time.Second)
	create("after")
	// One worker (concurrency 1): had the gap's add been queued at the start,
	// it would have been delivered before this one.
	testenv.WaitFor(t, "the new leader to deliver what comes after", 20*time.Second, func() bool { return delivered("after") == 1 })
	c.stopOK(syscall.SIGTERM)
	if n := delivered("in-the-gap"); n != 0 {
		t.Errorf("the change made while no replica led was delivered %d times; without state it is not replayed", n)
	}
}

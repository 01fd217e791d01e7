package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/state"
)

// A replica that wins the Lease but cannot act (its state file cannot be
// opened, an action cannot be built) gives the Lease up at once and exits
// non-zero: a healthy standby takes over at once, not after leaseDuration,
// and delivers.
func TestLeaderThatCannotActGivesTheLeaseUp(t *testing.T) {
	d, ns := setupTail(t)
	tests := []struct {
		name string
		bad  string // the broken replica's state and actions; %s is a folder that does not exist
		// held: the broken replica's state file is in a folder that exists,
		// held open by another process (this test) all along; lease is then
		// its leaderElection, short: it waits for leaseDuration +
		// renewDeadline (a last leader that lost the Lease has stopped by
		// then), then gives up.
		held  bool
		lease string
	}{
		{name: "state file cannot be opened", bad: "state: {path: %s/state.db}\nactions: [{name: out, log: {}}]"},
		{name: "an action cannot be built", bad: "actions: [{name: out, log: {path: %s/out.log}}]"},
		{name: "state file held by another process", bad: "state: {path: %s/state.db}\nactions: [{name: out, log: {}}]",
			held: true, lease: "leaseDuration: 4s, renewDeadline: 3s, retryPeriod: 500ms"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lease := fmt.Sprintf("cannot-act-%d", i)
			// A long Lease: a takeover that waits for it to expire is told
			// apart from one that follows its release.
			const leaseDuration = 15 * time.Second
			durations := "leaseDuration: 15s, renewDeadline: 10s, retryPeriod: 500ms"
			if tt.lease != "" {
				durations = tt.lease
			}
			config := func(dir, actions string) string {
				return writeConfig(t, dir, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
leaderElection: {namespace: %s, name: %s, %s}
%s
rules: [{name: all, resources: [{group: tail.example.com, resource: gadgets}], namespaces: [%[1]s], actions: [out]}]
`, ns, lease, durations, actions))
			}
			badDir, goodDir := t.TempDir(), t.TempDir()
			stateDir := filepath.Join(badDir, "missing")
			if tt.held {
				stateDir = badDir
				s, err := state.Open(filepath.Join(stateDir, "state.db"))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
			}
			bad := startProc(t, "run", "--config", config(badDir, fmt.Sprintf(tt.bad, stateDir)), "--kubeconfig", cp.Kubeconfig)
			bad.waitLog("this replica leads; acting", 30*time.Second)
			good := startProc(t, "run", "--config", config(goodDir, "actions: [{name: out, log: {}}]"), "--kubeconfig", cp.Kubeconfig)
			good.waitLog("standing by until elected", 30*time.Second)
			waiting := time.Now()

			select {
			case err := <-bad.exited:
				if err == nil {
					t.Errorf("the replica that cannot act exited 0:\n%s", bad.stderr.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("the replica that cannot act still runs 30s on:\n%s", bad.stderr.String())
			}
			if !strings.Contains(bad.stderr.String(), "cannot act; it gave the Lease up") {
				t.Errorf("the replica that cannot act did not say it gave the Lease up:\n%s", bad.stderr.String())
			}
			good.waitLog("this replica leads; acting", 2*leaseDuration)
			if took := time.Since(waiting); !tt.held && took > leaseDuration/3 {
				t.Errorf("the standby took over after %s; the Lease (%s) should have been released at once", took.Round(10*time.Millisecond), leaseDuration)
			}
			good.waitLog("all informers synced", 30*time.Second)
			name := fmt.Sprintf("after-%d", i)
			if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, name, map[string]any{"n": int64(1)}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for !delivered(good.payloads(), name, event.Add) {
				if time.Now().After(deadline) {
					t.Fatalf("the standby that took over did not deliver %s:\n%s", name, good.stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := good.stop(syscall.SIGTERM); err != nil {
				t.Errorf("graceful stop: %v\n%s", err, good.stderr.String())
			}
		})
	}
}

func delivered(ps []event.Payload, name string, typ event.Type) bool {
	for _, p := range ps {
		if p.Name == name && p.Type == typ {
			return true
		}
	}
	return false
}

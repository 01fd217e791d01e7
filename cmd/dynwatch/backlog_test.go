package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/state"
)

// receiver is a webhook receiver that is down (503) until up is set, and
// records the body of every delivery it accepted, in arrival order; slow
// makes it take a moment per delivery.
type receiver struct {
	srv       *httptest.Server
	up        atomic.Bool
	slow      atomic.Bool // each accepted delivery takes 200ms
	mu        sync.Mutex
	delivered []event.Payload
	attempted map[string]bool // ids, also those refused
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{attempted: map[string]bool{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var pl event.Payload
		if err := json.NewDecoder(req.Body).Decode(&pl); err != nil {
			t.Errorf("a delivery that is not a payload: %v", err)
		}
		if r.slow.Load() && r.up.Load() {
			time.Sleep(200 * time.Millisecond)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.attempted[pl.ID] = true
		if !r.up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		r.delivered = append(r.delivered, pl)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) payloads() []event.Payload {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event.Payload(nil), r.delivered...)
}

// pendingOnDisk returns the payloads the state file holds undelivered for
// action, read from a copy of the file (the running process holds the file's
// lock), or nil when the copy cannot be read (caught mid-write).
func pendingOnDisk(t *testing.T, path, action string) []event.Payload {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	cp := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(cp, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := state.Open(cp)
	if err != nil {
		return nil
	}
	defer s.Close()
	ps, err := s.PendingAfter(action, 0, 10000)
	if err != nil {
		return nil
	}
	out := make([]event.Payload, 0, len(ps))
	for _, p := range ps {
		var pl event.Payload
		if err := json.Unmarshal(p.JSON, &pl); err != nil {
			t.Fatalf("a pending delivery that is not a payload: %v: %s", err, p.JSON)
		}
		out = append(out, pl)
	}
	return out
}

// spec.n and replay of each payload, in order: "0 1 2 r3".
func seqOf(ps []event.Payload) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(' ')
		}
		if p.Replay {
			b.WriteByte('r')
		}
		var o struct{ Spec struct{ N int64 } }
		_ = json.Unmarshal(p.Object, &o)
		fmt.Fprint(&b, o.Spec.N)
	}
	return b.String()
}

func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool, log func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s\n%s", timeout, what, log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SIGTERM while the receiver is down and events wait on disk: run exits 0
// (nothing is lost: the events are kept) and says so. The next start
// delivers those events first, as they were (not as replays), then what the
// diff found changed while it was down, then new live events of the same
// object: exactly once each, in that order.
func TestSIGTERMKeepsTheBacklogAndDeliversItFirst(t *testing.T) {
	d, ns := setupTail(t)
	recv := newReceiver(t)
	dir := t.TempDir()
	statePath := filepath.Join(dir, "state.db")
	cfg := writeConfig(t, dir, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
shutdownGrace: 1s
actions:
  - name: hook
    webhook: {url: %q, retry: {max: 1000, initialBackoff: 50ms, maxBackoff: 200ms}}
rules:
  - name: gadgets
    resources: [{group: tail.example.com, resource: gadgets}]
    namespaces: [%s]
    actions: [hook]
`, statePath, recv.srv.URL, ns))
	first := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	first.waitLog("state: baseline recorded", 30*time.Second)
	if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, "o", map[string]any{"n": int64(0)}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setN(t, d, ns, "o", 1)
	setN(t, d, ns, "o", 2)
	waitUntil(t, "the three events on disk and the action down", 30*time.Second, func() bool {
		return seqOf(pendingOnDisk(t, statePath, "hook")) == "0 1 2" && strings.Contains(first.stderr.String(), "action failing")
	}, first.stderr.String)
	first.stopOK(syscall.SIGTERM)
	if log := first.stderr.String(); !strings.Contains(log, "they are kept on disk and delivered after the next start") {
		t.Errorf("the stop does not say the backlog is kept:\n%s", log)
	}
	if got := seqOf(pendingOnDisk(t, statePath, "hook")); got != "0 1 2" {
		t.Fatalf("after the stop the file holds %q, want the three events 0 1 2", got)
	}

	setN(t, d, ns, "o", 3) // while stopped: found by the next start's diff
	second := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	second.waitLog("delivering events left from the last run first", 30*time.Second)
	second.waitLog("state: compared with the records", 30*time.Second)
	setN(t, d, ns, "o", 4) // live, while the receiver is still down
	waitUntil(t, "the old, the replayed and the live event on disk", 30*time.Second, func() bool {
		return seqOf(pendingOnDisk(t, statePath, "hook")) == "0 1 2 r3 4"
	}, func() string { return seqOf(pendingOnDisk(t, statePath, "hook")) + "\n" + second.stderr.String() })
	recv.up.Store(true)
	waitUntil(t, "five deliveries", 30*time.Second, func() bool { return len(recv.payloads()) >= 5 }, second.stderr.String)
	second.stopOK(syscall.SIGTERM)
	if got := seqOf(recv.payloads()); got != "0 1 2 r3 4" {
		t.Errorf("delivered %q, want the kept events first, then the replay, then the live one: 0 1 2 r3 4", got)
	}
	if left := pendingOnDisk(t, statePath, "hook"); len(left) != 0 {
		t.Errorf("still on disk after every delivery: %q", seqOf(left))
	}
}

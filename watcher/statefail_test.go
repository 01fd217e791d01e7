//go:build linux

package watcher

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/metrics"
)

// limitFileSize makes every write past size bytes fail with EFBIG in this
// process (the Go runtime ignores SIGXFSZ), as a full disk would; the API
// server runs in processes of its own, started before. lift lifts it again.
// It is process-wide: the tests that use it do not run in parallel.
func limitFileSize(t *testing.T, size int64) (lift func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: uint64(size), Max: old.Max}); err != nil {
		t.Fatal(err)
	}
	lifted := false
	lift = func() {
		if !lifted {
			lifted = true
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(lift)
	return lift
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// setData writes data.v of a ConfigMap.
func setData(t *testing.T, ns, name, v string) {
	t.Helper()
	mutate(t, cmGVR, ns, name, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, v, "data", "v")
	})
}

// A state file that refuses commits (here: it cannot grow, as on a full disk)
// loses no event: the events wait in memory, the refusals are counted and
// make StateErr (so /readyz) say so, and once the disk recovers they are
// delivered, in order. Stopping while it refuses leaves the records as they
// were, so the next start finds what happened.
func TestStateCommitFailuresKeepEvents(t *testing.T) {
	ns := namespace(t)
	rc := newReceiver(t)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	config := fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
shutdownGrace: 2s
actions: [{name: hook, webhook: {url: %q, retry: {max: 100, initialBackoff: 50ms, maxBackoff: 200ms}}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [hook]}]
`, dbPath, rc.srv.URL, ns)
	m := metrics.New(metrics.Sources{})
	r, stop := runDurable(t, durableRun{config: config, dbPath: dbPath, metrics: m})
	compared(t, r)
	create(t, cmGVR, ns, configMap(ns, "a", map[string]any{"v": "small"}))
	waitUntil(t, "the add", eventWait, func() bool { return len(rc.payloads()) == 1 })

	big := strings.Repeat("x", 300<<10) // its delivery cannot fit in the file as it is
	lift := limitFileSize(t, fileSize(t, dbPath))
	setData(t, ns, "a", big)
	setData(t, ns, "a", "after")
	waitUntil(t, "the refusals to show", eventWait, func() bool { return r.w.StateErr() != nil })
	if got := scrape(m, "dynwatch_state_commit_failures_total "); len(got) != 1 || got[0] == "dynwatch_state_commit_failures_total 0" {
		t.Errorf("failures metric %v, want above 0", got)
	}
	if n := len(rc.payloads()); n != 1 {
		t.Errorf("%d deliveries while no commit lands, want 1 (the add)", n)
	}
	lift() // the disk recovers
	waitUntil(t, "both updates", eventWait, func() bool { return len(rc.payloads()) >= 3 })
	got := rc.payloads()
	if len(got) != 3 || got[1].Type != event.Update || dataV(got[1]) != big || got[2].Type != event.Update || dataV(got[2]) != "after" {
		t.Fatalf("after recovery: %s, want the big update then the small one", summary(got))
	}
	waitUntil(t, "StateErr to clear", eventWait, func() bool { return r.w.StateErr() == nil })
	// Every delivery so far is marked done on disk before the file refuses
	// again: a mark the file refused would deliver that event again after the
	// restart (at least once), which is not what this test is about.
	waitUntil(t, "the deliveries marked done on disk", eventWait, func() bool {
		pending, err := r.w.durable.store.PendingActions()
		return err == nil && pending["hook"] == 0
	})

	// Refused again (now no write lands at all), and dynwatch stops before
	// the disk recovers.
	lift = limitFileSize(t, 1)
	setData(t, ns, "a", big+"y")
	waitUntil(t, "the refusal", eventWait, func() bool { return r.w.StateErr() != nil })
	stop()
	lift()
	r2, _ := runDurable(t, durableRun{config: config, dbPath: dbPath})
	compared(t, r2)
	waitUntil(t, "the replayed update", eventWait, func() bool { return len(rc.payloads()) >= 4 })
	got = rc.payloads()
	if last := got[len(got)-1]; len(got) != 4 || last.Type != event.Update || !last.Replay || dataV(last) != big+"y" {
		t.Errorf("next start: %s, want one replayed update to the last content", summary(got))
	}
}

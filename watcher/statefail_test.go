//go:build linux

package watcher

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testos"
	"github.com/dynwatch/dynwatch/metrics"
	"github.com/dynwatch/dynwatch/state"
)

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
	lift := testos.LimitFileSize(t, fileSize(t, dbPath))
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
	lift = testos.LimitFileSize(t, 1)
	setData(t, ns, "a", big+"y")
	waitUntil(t, "the refusal", eventWait, func() bool { return r.w.StateErr() != nil })
	// That event is neither delivered nor on disk: Run says so, and the
	// committer logs it once, with the count.
	r.cancel()
	err := <-r.done
	r.done <- err // for stop
	stop()
	if !errors.Is(err, ErrUndelivered) || strings.Count(r.logs.String(), "what=events notWritten=") != 1 {
		t.Errorf("Run ended with %v after a stop while commits failed, want ErrUndelivered and one line with the count; logs:\n%s", err, r.logs.String())
	}
	lift()
	r2, _ := runDurable(t, durableRun{config: config, dbPath: dbPath})
	compared(t, r2)
	waitUntil(t, "the replayed update", eventWait, func() bool { return len(rc.payloads()) >= 4 })
	got = rc.payloads()
	if last := got[len(got)-1]; len(got) != 4 || last.Type != event.Update || !last.Replay || dataV(last) != big+"y" {
		t.Errorf("next start: %s, want one replayed update to the last content", summary(got))
	}
}

// While the file refuses commits, what waits in memory is bounded: past the
// bound Run stops by itself with ErrUndelivered and the committer's
// OverflowError (logged at ERROR), the committer holds no more than the
// bound, and the next start replays the change from the records on disk.
func TestStateBoundStopsTheRun(t *testing.T) {
	const limit = 256 << 10
	ns := namespace(t)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	config := cmsConfig(dbPath, ns)
	r, stop := runDurable(t, durableRun{config: config, dbPath: dbPath, maxPending: limit})
	compared(t, r)
	create(t, cmGVR, ns, configMap(ns, "a", map[string]any{"v": "small"}))
	waitUntil(t, "the add", eventWait, func() bool { return len(r.out.snapshot()) == 1 })
	lift := testos.LimitFileSize(t, fileSize(t, dbPath))
	var last string
	for i := 0; !strings.Contains(r.logs.String(), "wait in memory; stopping"); i++ {
		if i == 40 { // 40 updates of 2 x 20 KiB: more than 3 times the bound
			t.Fatalf("no stop at the bound; logs:\n%s", r.logs.String())
		}
		last = fmt.Sprintf("%03d%s", i, strings.Repeat("x", 20<<10))
		setData(t, ns, "a", last)
		if _, b := r.w.durable.commits.Pending(); b > limit {
			t.Fatalf("%d bytes wait, past the bound %d", b, limit)
		}
	}
	var err error
	select {
	case err = <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("Run did not return after the bound was reached; logs:\n%s", r.logs.String())
	}
	r.done <- err // for stop
	stop()
	var oe *state.OverflowError
	if !errors.Is(err, ErrUndelivered) || !errors.As(err, &oe) || !strings.Contains(r.logs.String(), "level=ERROR msg=\"state: the state file has refused commits for ") {
		t.Errorf("Run ended with %v, want ErrUndelivered with the OverflowError, logged at ERROR; logs:\n%s", err, r.logs.String())
	}
	if n := len(r.out.snapshot()); n != 1 {
		t.Errorf("%d deliveries while nothing could be committed, want 1", n)
	}
	lift()
	r2, _ := runDurable(t, durableRun{config: config, dbPath: dbPath})
	compared(t, r2)
	waitUntil(t, "the replayed update", eventWait, func() bool { return len(r2.out.snapshot()) >= 1 })
	if got := r2.out.snapshot(); len(got) != 1 || got[0].Type != event.Update || !got[0].Replay || dataV(got[0]) != last {
		t.Errorf("next start: %s, want one replayed update to the last content", summary(got))
	}
}

package watcher

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// Review: a crash while a group waits, and a restart later than the wait:
// the group is due at once, so the queue's timer forms it as soon as its
// first event is paged back in from disk, before the rest are; the rest join
// a group just delivered and wait the whole interval. The group arrives
// split, most of it an interval late. Here: 40 events, wait 2s, interval 30s,
// restart 3s after the crash; want all 40 within a few seconds of the start.
func TestReviewGroupRestartAfterWaitNotSplit(t *testing.T) {
	ns := namespace(t)
	rc := newGroupReceiver(t)
	db := filepath.Join(t.TempDir(), "state.db")
	config := groupedConfig(db, ns, rc.srv.URL, "{by: [namespace], wait: 2s, interval: 30s}")
	r1, stop1 := runDurable(t, durableRun{config: config, dbPath: db})
	compared(t, r1)
	const n = 40
	for i := range n {
		create(t, cmGVR, ns, configMap(ns, fmt.Sprint("cm", i), map[string]any{"v": "0"}))
	}
	waitUntil(t, "the events in the open group", 30*time.Second, func() bool { return r1.w.Queue("hook").GroupEvents() == n })
	r1.w.Halt() // as kill -9
	stop1()
	time.Sleep(3 * time.Second)
	r2, _ := runDurable(t, durableRun{config: config, dbPath: db})
	compared(t, r2)
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) && len(rc.names()) < n {
		time.Sleep(100 * time.Millisecond)
	}
	if got := len(rc.names()); got != n {
		var sizes []int
		for _, g := range rc.groups() {
			sizes = append(sizes, g.body.Count)
		}
		t.Errorf("8s after the restart: %d of %d delivered, in deliveries of %v; the rest wait the interval", got, n, sizes)
	}
}

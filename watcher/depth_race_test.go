package watcher

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
	"github.com/dynwatch/dynwatch/metrics"
	"github.com/dynwatch/dynwatch/state"
)

// blockedIn reports whether a goroutine running fn waits for a mutex.
func blockedIn(t *testing.T, fn string) bool {
	t.Helper()
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 2); err != nil {
		t.Fatal(err)
	}
	for _, g := range strings.Split(buf.String(), "\n\n") {
		if strings.Contains(g, fn) && strings.Contains(g, "[sync.Mutex.Lock") {
			return true
		}
	}
	return false
}

// A scrape that comes while the pager moves an action's backlog from disk to
// memory counts every undelivered event: it does not read memory before the
// move and the disk, no longer looked at, after it.
func TestQueueDepthDuringAPageIn(t *testing.T) {
	ns := namespace(t)
	rc := newReceiver(t)
	rc.down.Store(true) // nothing is delivered: the backlog stays as it is
	dbPath := filepath.Join(t.TempDir(), "state.db")
	r, _ := runWithState(t, env, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
shutdownGrace: 100ms
actions: [{name: hook, webhook: {url: %q, retry: {max: 1000, initialBackoff: 10s, maxBackoff: 20s}}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [hook]}]
`, dbPath, rc.srv.URL, ns), dbPath, nil)
	waitUntil(t, "the watcher to sync", 30*time.Second, func() bool { return r.w.Synced() && len(r.w.durable.listingKeys()) == 0 })

	const backlog = 10
	pg, store := r.w.durable.pager, r.w.durable.store
	pg.mu.Lock() // as pageIn holds it while it moves a backlog into memory
	var pending []*event.Delivery
	if err := store.Update(func(tx *state.Tx) error {
		for i := range backlog {
			pl := &event.Payload{ID: fmt.Sprint("id", i), Rule: "cms", Name: fmt.Sprint("c", i)}
			d := &event.Delivery{Payload: pl, JSON: []byte(`{}`), Key: "/configmaps/" + ns + "/" + pl.Name}
			seq, err := tx.Enqueue("hook", d.Key, d.JSON)
			d.Seq = seq
			pending = append(pending, d)
			if err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		pg.mu.Unlock()
		t.Fatal(err)
	}
	a := pg.action("hook")
	a.spilled = true // on disk only, so far
	sampled := make(chan []metrics.QueueSample, 1)
	go func() { sampled <- r.w.QueueSamples() }()
	testenv.WaitFor(t, "the scrape to wait for the pager", 10*time.Second, func() bool { return blockedIn(t, "(*Watcher).QueueSamples") })
	q := r.w.Queue("hook")
	for _, d := range pending { // the page-in: into memory, and caught up
		q.Enqueue(d)
		a.last = d.Seq
	}
	a.spilled = false
	pg.mu.Unlock()

	found := false
	for _, s := range <-sampled {
		if s.Action == "hook" {
			found = true
			if s.Depth != backlog {
				t.Errorf("depth %d during a page-in of %d undelivered events", s.Depth, backlog)
			}
		}
	}
	if !found {
		t.Error("no sample of action hook")
	}
}

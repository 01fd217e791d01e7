//go:build linux

package watcher

import (
	"path/filepath"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/discovery"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testos"
)

// A resource that appears while dynwatch runs has all its objects fire add,
// even when dynwatch stops (as if killed) before their adds are on disk: the
// next start fires them. The seam lets what the new watch's start submitted
// land, then makes the state file refuse every commit (its list's adds
// included) until dynwatch has stopped.
func TestNewResourceAddsSurviveAStopBeforeTheirCommit(t *testing.T) {
	ns := namespace(t)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	config := cmsConfig(dbPath, ns)
	disc := &hidingDiscovery{DiscoveryInterface: discovery.NewDiscoveryClientForConfigOrDie(env.Config)}
	disc.hide.Store(true) // configmaps are not served at first
	var armed atomic.Bool
	var lift func()
	r, stop := runDurable(t, durableRun{config: config, dbPath: dbPath, disc: disc, setup: func(w *Watcher) {
		w.durable.afterStart = func() {
			if armed.CompareAndSwap(true, false) {
				w.durable.commits.Flush()
				lift = testos.LimitFileSize(t, 1)
			}
		}
	}})
	waitUntil(t, "the watcher to sync", eventWait, r.w.Synced)
	create(t, cmGVR, ns, configMap(ns, "n", nil))

	armed.Store(true)
	disc.hide.Store(false)
	r.w.Refresh() // configmaps appear: a new resource
	waitUntil(t, "the refusal", eventWait, func() bool { return r.w.StateErr() != nil })
	stop()
	lift()

	r, _ = runDurable(t, durableRun{config: config, dbPath: dbPath})
	r.out.waitMatch(t, "the add of the new resource's object", eventWait, func(p event.Payload) bool {
		return p.Name == "n" && p.Type == event.Add
	})
}

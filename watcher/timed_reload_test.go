package watcher

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/timed"
)

// Without state.path, a reload that keeps a timed rule keeps its waits: an
// event handled while the reload sorts the waits must still find the
// object's state, or it takes the object for new and its wait restarts
// (and what it writes is then overwritten by the reload's copy).
func TestReloadKeepsInMemoryWaitsVisible(t *testing.T) {
	w := &Watcher{waits: newWaitBook(true)}
	specs := map[string]timed.Spec{"stuck": {Fire: timed.FireEnter, For: time.Hour}}
	w.waits.setSpecs(specs)
	key := waitKey("apps/deployments/prod/api", "stuck")
	pending := timed.State{Holding: true, Since: time.Now()}
	w.waits.set(key, "stuck", timed.State{}, pending)
	var stop, lost atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			if (memWaits{w.waits}).Wait("apps/deployments/prod/api", "stuck") != pending {
				lost.Store(true)
			}
		}
	}()
	inScope := func(string) bool { return true }
	for range 2000 {
		w.waits.setSpecs(specs)
		w.forgetMemWaits(inScope)
		if lost.Load() {
			break
		}
	}
	stop.Store(true)
	<-done
	if lost.Load() {
		t.Error("an event during a reload found no state for a pending object")
	}
}

package watcher

import (
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/timed"
)

// An object that flaps (holds, stops, holds again) under a rule with a long
// `for` restarts its wait each time: the book must keep one due time for it,
// not one per flap until each old one falls due (a `for: 1h` object that
// flaps every 10s would hold 360 of them).
func TestFlappingObjectKeepsOneDueTime(t *testing.T) {
	spec := timed.Spec{Fire: timed.FireEnter, For: time.Hour}
	book := newWaitBook(true)
	book.setSpecs(map[string]timed.Spec{"stuck": spec})
	key := waitKey("apps/deployments/prod/api", "stuck")
	now := time.Now()
	var prev timed.State
	for i := range 1000 {
		at := now.Add(time.Duration(i) * time.Second)
		holding := timed.State{Holding: true, Since: at}
		book.set(key, "stuck", prev, holding)
		book.set(key, "stuck", holding, timed.State{})
		prev = timed.State{}
	}
	book.set(key, "stuck", prev, timed.State{Holding: true, Since: now.Add(time.Hour)})
	book.mu.Lock()
	n := book.dues.Len()
	book.mu.Unlock()
	if n > 1 {
		t.Errorf("%d due times kept for one object, want 1", n)
	}
}

package dyninformer

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestTouchFIFOTellsWhatTheWatchDelivers runs the script (a list, changes, a
// bookmark, 410 Gone and a relist) through newController: every change and
// bookmark the watches deliver is seen, and each complete list is seen and
// listed at its resourceVersion, in the order the reflector met them.
func TestTouchFIFOTellsWhatTheWatchDelivers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu  sync.Mutex
		got []string
	)
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, s)
	}
	var told calls
	touch := watchTouch{seen: func() { note("seen") }, listed: func(rv string) { note("listed " + rv) }}
	h := told.handler()
	_, ctrl := newController((&scriptedSource{stages: script(t)}).listWatch(), 0, "test", nil, h, touch)
	go ctrl.RunWithContext(ctx)

	want := []string{
		"seen", "listed 10", // the first list
		"seen", "seen", "seen", "seen", // three changes and a bookmark; the 410 ends the watch
		"seen", "listed 20", // the relist
		"seen", "seen", // two changes
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(told.got()) < 14 { // the handler's calls of TestControllerTellsWhatTheSharedInformerTold
		if time.Now().After(deadline) {
			t.Fatalf("not every call came: %q", told.got())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // nothing more comes
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Fatalf("touched:\n got %q\nwant %q", got, want)
	}
}

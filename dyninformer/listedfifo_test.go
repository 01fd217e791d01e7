package dyninformer

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestListedFIFOTellsEachList runs the script (a list, changes, a bookmark,
// 410 Gone and a relist) through newController: each complete list is told
// at its resourceVersion, in order, and nothing else is.
func TestListedFIFOTellsEachList(t *testing.T) {
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
	_, ctrl := newController((&scriptedSource{stages: script(t)}).listWatch(), 0, "test", nil, told.handler(), func(rv string) { note("listed " + rv) })
	go ctrl.RunWithContext(ctx)

	want := []string{"listed 10", "listed 20"} // the first list, and the relist after the 410
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
		t.Fatalf("listed:\n got %q\nwant %q", got, want)
	}
}

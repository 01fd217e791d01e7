package watcher

import (
	"fmt"
	"testing"
	"time"
)

// members counts the queues the action set still holds for action.
func (s *startedQueues) count(action string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.members[action])
}

// A queue that a reload replaced leaves the action set once it has handed its
// backlog on, however soon it stops: many reloads leave one queue per action,
// not one per reload.
func TestReplacedQueuesLeaveTheActionSet(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	hooks := map[string]*receiver{"a": newReceiver(t)}
	r := start(t, hookConfig(ns, "5s", hooks, "a"))
	const reloads = 40
	for i := range reloads {
		reload(t, r, hookConfig(ns, fmt.Sprintf("%ds", 5+(i+1)%2), hooks, "a")) // a's queue replaced each time
	}
	// Every replaced queue stops within moments (it has nothing to hand on).
	deadline := time.Now().Add(10 * time.Second)
	for r.w.acts.set.count("a") > 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := r.w.acts.set.count("a"); n != 1 {
		t.Errorf("after %d reloads that replaced action a's queue, the action set holds %d of its queues; want 1 (the current one)", reloads, n)
	}
}

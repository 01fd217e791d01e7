package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/dyninformer"
)

// TestStalledSaysWhenTheHandlingIsStuck: a stalled watch is the API server's
// silence unless a handling of its events has run for over half of
// stallAfter; then readyz says so.
func TestStalledSaysWhenTheHandlingIsStuck(t *testing.T) {
	t.Parallel()
	now := time.Now()
	last := now.Add(-5 * time.Minute)
	quiet := stalled(dyninformer.Status{}, last, now, 3*time.Minute)
	if !strings.Contains(quiet, "no event or bookmark for 5m0s (stallAfter 3m0s)") || strings.Contains(quiet, "handling") {
		t.Errorf("a watch without a call in flight: %q", quiet)
	}
	brief := stalled(dyninformer.Status{Busy: now.Add(-time.Second)}, last, now, 3*time.Minute)
	if strings.Contains(brief, "handling") {
		t.Errorf("a call in flight for a second is no cause: %q", brief)
	}
	stuck := stalled(dyninformer.Status{Busy: now.Add(-4 * time.Minute)}, last, now, 3*time.Minute)
	if !strings.Contains(stuck, "no event or bookmark for 5m0s") || !strings.Contains(stuck, "one handling of its events has run for 4m0s, and the watch waits for it") {
		t.Errorf("a call in flight for 4 minutes: %q", stuck)
	}
}

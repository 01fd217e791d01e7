//go:build linux

package state

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// While the file refuses commits, what waits in memory stays within the
// bound: the change that would pass it stops the committer (it is told once,
// with why), every waiting change is given up unwritten, later ones are
// refused, Run returns by itself, and no record moved: the next start's
// comparison finds what changed.
func TestCommitterStopsAtItsBound(t *testing.T) {
	const limit = 512 << 10
	path := filepath.Join(t.TempDir(), "state.db")
	var logs bytes.Buffer
	var overflows atomic.Int64
	var overflow atomic.Pointer[OverflowError]
	s, c, ran := committerWith(t, path, &logs, CommitterOptions{MaxPendingBytes: limit, Overflow: func(oe *OverflowError) {
		overflows.Add(1)
		overflow.Store(oe)
	}})
	lift := fillDisk(t, path)
	first := submit(c, "2", []byte(`{"data":"`+strings.Repeat("x", 256<<10)+`"}`))
	waitFor(t, "a commit to be refused", func() bool { return c.Err() != nil })
	small := []byte(`{"data":"` + strings.Repeat("y", 1<<10) + `"}`)
	var chs []<-chan error
	for i := range 2000 {
		chs = append(chs, submit(c, "3", small))
		if _, b := c.Pending(); b > limit {
			t.Fatalf("after %d submissions %d bytes wait, past the bound %d", i+1, b, limit)
		}
	}
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return once the bound was reached")
	}
	if n := overflows.Load(); n != 1 {
		t.Fatalf("Overflow called %d times, want once", n)
	}
	oe := overflow.Load()
	if oe.Events < 200 || oe.Bytes > limit || !strings.Contains(oe.Error(), "the state file has refused commits for ") ||
		!strings.Contains(oe.Error(), "wait in memory; stopping: the next start compares the listed objects with the records on disk") {
		t.Errorf("overflow %+v: %v", oe, oe)
	}
	for i, ch := range append([]<-chan error{first}, chs...) {
		if err := <-ch; !errors.Is(err, ErrGivenUp) {
			t.Fatalf("change %d ended with %v, want ErrGivenUp", i, err)
		}
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 2 {
		t.Errorf("%d ERROR lines, want 2 (the bound, the count given up):\n%s", n, logs.String())
	}
	if n, b := c.Pending(); n != 0 || b != 0 {
		t.Errorf("Pending after Run returned = %d, %d", n, b)
	}
	lift()
	if rv := recordedVersion(t, s); rv != "1" {
		t.Errorf("recorded version %s, want 1: a record moved past an event not on disk", rv)
	}
	if err := submitWait(c, "4", nil); !errors.Is(err, ErrGivenUp) {
		t.Errorf("a change after the stop ended with %v, want ErrGivenUp", err)
	}
	c.Close()
	_ = s.Close()
}

//go:build linux

package watcher

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/internal/testos"
)

// A stop while the file refuses commits logs one line with the count, also
// when a list's comparison with the records is among what is given up: that
// comparison is not written either (the next start compares again), so it is
// no ERROR of its own.
func TestStopWhileCommitsFailDuringTheComparison(t *testing.T) {
	ns := namespace(t)
	dbPath := filepath.Join(t.TempDir(), "state.db")
	config := fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions: [{name: out, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [out]}]
`, dbPath, ns)
	create(t, cmGVR, ns, configMap(ns, "before", nil))
	r, stop := runDurable(t, durableRun{config: config, dbPath: dbPath})
	compared(t, r) // the baseline
	stop()

	var once sync.Once
	ended := make(chan struct{})
	var before int
	r, stop = runDurable(t, durableRun{config: config, dbPath: dbPath, setup: func(w *Watcher) {
		testos.LimitFileSize(t, 1) // the file is open: from now on no write lands
		w.durable.beforeCompare = func(dyninformer.Key) {
			once.Do(func() {
				before, _ = w.durable.commits.Pending()
				close(ended)
			})
		}
	}})
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the list never ended")
	}
	waitUntil(t, "the comparison submitted while commits fail", eventWait, func() bool {
		n, _ := r.w.durable.commits.Pending()
		return n > before && r.w.StateErr() != nil
	})
	r.cancel()
	err := <-r.done
	r.done <- err // for stop
	stop()
	logs := r.logs.String()
	if !errors.Is(err, ErrUndelivered) || strings.Count(logs, "what=events notWritten=") != 1 {
		t.Errorf("Run ended with %v, want ErrUndelivered and one line with the count; logs:\n%s", err, logs)
	}
	if n := strings.Count(logs, "level=ERROR"); n != 1 {
		t.Errorf("%d ERROR lines at a stop while commits fail, want 1 (the count); logs:\n%s", n, logs)
	}
}

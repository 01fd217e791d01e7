package watcher

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/rules"
	"github.com/dynwatch/dynwatch/state"
)

// TestMeasureMemoryWhileReceiverDown holds N events of S bytes while a receiver
// is down (the queue never delivers), and restarts with that backlog: at most
// 1 000 deliveries are ever in memory, the rest wait on disk, none is dropped.
// By default a small run checks that; as a measurement of the heap:
//
//	DYNWATCH_MEASURE=100000x10240 go test ./watcher -run TestMeasureMemoryWhileReceiverDown -v
func TestMeasureMemoryWhileReceiverDown(t *testing.T) {
	spec := os.Getenv("DYNWATCH_MEASURE")
	if spec == "" {
		spec = "2500x1024"
	}
	ns, sz, _ := strings.Cut(spec, "x")
	n, err := strconv.Atoi(ns)
	if err != nil {
		t.Fatalf("DYNWATCH_MEASURE=%s: %v", spec, err)
	}
	size, err := strconv.Atoi(sz)
	if err != nil {
		t.Fatalf("DYNWATCH_MEASURE=%s: %v", spec, err)
	}
	const window = 1000 // the documented cap of deliveries held in memory per action
	dir := t.TempDir()
	file, err := plan.Parse("m.yaml", []byte(`apiVersion: dynwatch/v1alpha1
state: {path: `+filepath.Join(dir, "state.db")+`}
actions: [{name: out, webhook: {url: "http://127.0.0.1:1/down"}}]
rules: [{name: r, resources: [{kind: ConfigMap}], actions: [out]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	res := event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	key := dyninformer.Key{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}}
	fill := strings.Repeat("x", size)
	open := func() (*Watcher, *state.Store) {
		s, err := state.Open(filepath.Join(dir, "state.db"))
		if err != nil {
			t.Fatal(err)
		}
		w, err := New(file, nil, nil, Options{Store: s})
		if err != nil {
			t.Fatal(err)
		}
		go w.durable.commits.Run()
		w.pipe.Store(&pipeline{file: file, log: w.log, queues: queueMap(w.acts.queues),
			clusters: map[string]*clusterIndex{"": {index: map[schema.GroupVersionResource][]*rules.Rule{key.GVR: file.Rules},
				paths: map[schema.GroupVersionResource][]string{key.GVR: recordPaths(file.Rules)}}}})
		return w, s
	}
	w, s := open()
	start := time.Now()
	peak := uint64(0)
	for i := range n {
		obj := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d","namespace":"m","uid":"u-%d","resourceVersion":"%d"},"data":{"v":"%s"}}`, i, i, i+1, fill)
		w.handle(key, event.New(event.Add, res, []byte(obj), nil, time.Now()))
		if i%10000 == 9999 {
			w.durable.commits.Flush()
			peak = max(peak, heap())
		}
	}
	w.durable.commits.Flush()
	peak = max(peak, heap())
	t.Logf("%d events of %d B with the receiver down: %s; heap peak %d MiB, in memory %d deliveries (window %d)",
		n, size, time.Since(start).Round(time.Millisecond), peak>>20, w.Queue("out").Len(), maxWindow)
	checkHeld(t, w, s, n, min(n, window))
	// A large backlog grows the file, not the process: the heap stays well
	// below the events' bytes.
	if total := uint64(n) * uint64(size); total >= 100<<20 && peak > total/2 {
		t.Errorf("heap peak %d MiB for %d MiB of events held on disk", peak>>20, total>>20)
	}
	w.durable.commits.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	w, s = open()
	start = time.Now()
	if err := w.durable.pager.spillAll(); err != nil {
		t.Fatal(err)
	}
	w.durable.pager.pageIn()
	t.Logf("restart with %d undelivered: paged in %d in %s; heap %d MiB", n, w.Queue("out").Len(), time.Since(start).Round(time.Millisecond), heap()>>20)
	checkHeld(t, w, s, n, min(n, window))
	w.durable.commits.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkHeld checks that the action's queue holds inMemory deliveries and never
// held more, dropped none, and that all n wait on disk.
func checkHeld(t *testing.T, w *Watcher, s *state.Store, n, inMemory int) {
	t.Helper()
	q := w.Queue("out")
	if st := q.Stats(); st.Peak > uint64(inMemory) || st.Dropped != 0 || q.Len() != inMemory {
		t.Errorf("in memory %d deliveries, at most %d at once, %d dropped; want %d, never more, none dropped", q.Len(), st.Peak, st.Dropped, inMemory)
	}
	counts, err := s.PendingActions()
	if err != nil {
		t.Fatal(err)
	}
	if counts["out"] != n {
		t.Errorf("%d deliveries on disk, want all %d", counts["out"], n)
	}
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

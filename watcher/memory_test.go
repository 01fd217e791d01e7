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

// TestMeasureMemoryWhileReceiverDown measures the heap while a receiver is down
// for N events of S bytes (the queue never delivers), and after a restart with
// that backlog. It only runs when asked, as a measurement:
//
//	DYNWATCH_MEASURE=100000x10240 go test ./watcher -run TestMeasureMemoryWhileReceiverDown -v
func TestMeasureMemoryWhileReceiverDown(t *testing.T) {
	spec := os.Getenv("DYNWATCH_MEASURE")
	if spec == "" {
		t.Skip("a measurement: set DYNWATCH_MEASURE=EVENTSxBYTES")
	}
	ns, sz, _ := strings.Cut(spec, "x")
	n, _ := strconv.Atoi(ns)
	size, _ := strconv.Atoi(sz)
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
		w.pipe.Store(&pipeline{file: file, log: w.log, index: map[schema.GroupVersionResource][]*rules.Rule{key.GVR: file.Rules},
			queues: queueMap(w.queues), paths: map[schema.GroupVersionResource][]string{key.GVR: recordPaths(file.Rules)}})
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
	w.durable.commits.Close()
	_ = s.Close()

	w, s = open()
	start = time.Now()
	if err := w.durable.pager.spillAll(); err != nil {
		t.Fatal(err)
	}
	w.durable.pager.pageIn()
	t.Logf("restart with %d undelivered: paged in %d in %s; heap %d MiB", n, w.Queue("out").Len(), time.Since(start).Round(time.Millisecond), heap()>>20)
	w.durable.commits.Close()
	_ = s.Close()
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

package watcher

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/state"
	"github.com/dynwatch/dynwatch/timed"
)

// pendingObjects is how many objects wait at once in the timers' benchmarks.
const pendingObjects = 100_000

func pendingKey(i int) string {
	return waitKey(fmt.Sprintf("apps/deployments/team-%d/app-%d", i%100, i), "stuck")
}

// BenchmarkPendingWaits is the cost of 100 000 objects whose `for` wait
// runs, without state.path (the book holds their states): memory per
// pending object, the time to start a wait and to take it out when due,
// and that no goroutine runs per wait.
func BenchmarkPendingWaits(b *testing.B) {
	spec := timed.Spec{Fire: timed.FireEnter, For: 10 * time.Minute}
	keys := make([]string, pendingObjects)
	for i := range keys {
		keys[i] = pendingKey(i)
	}
	now := time.Now()
	var perObject, setNs, popNs float64
	for b.Loop() {
		goroutines := runtime.NumGoroutine()
		before := heapInUse()
		book := newWaitBook(true)
		book.setSpecs(map[string]timed.Spec{"stuck": spec})
		start := time.Now()
		for i, k := range keys {
			book.set(k, "stuck", timed.State{}, timed.State{Holding: true, Since: now.Add(time.Duration(i) * time.Millisecond)})
		}
		setNs = float64(time.Since(start).Nanoseconds()) / pendingObjects
		perObject = float64(int64(heapInUse())-int64(before)) / pendingObjects
		if n := runtime.NumGoroutine(); n > goroutines {
			b.Fatalf("%d goroutines more with %d waits: want none per wait", n-goroutines, pendingObjects)
		}
		if c := book.counted()["stuck"]; c.pending != pendingObjects {
			b.Fatalf("pending %d, want %d", c.pending, pendingObjects)
		}
		start = time.Now()
		due := book.popDue(now.Add(spec.For + time.Hour))
		popNs = float64(time.Since(start).Nanoseconds()) / pendingObjects
		if len(due) != pendingObjects {
			b.Fatalf("%d due, want %d", len(due), pendingObjects)
		}
		runtime.KeepAlive(book)
	}
	b.ReportMetric(perObject, "B/pending")
	b.ReportMetric(setNs, "ns/set")
	b.ReportMetric(popNs, "ns/pop")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkPendingWaitsOnDisk is the cost of 100 000 waits with state.path:
// bytes of the state file per wait, and the time to write one (in
// transactions of 1 000, as a burst of events shares commits), then the
// book's memory per pending object (it keeps due times only).
func BenchmarkPendingWaitsOnDisk(b *testing.B) {
	spec := timed.Spec{Fire: timed.FireEnter, For: 10 * time.Minute}
	now := time.Now()
	var fileBytes, putNs, perObject float64
	for b.Loop() {
		path := filepath.Join(b.TempDir(), "state.db")
		store, err := state.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		st, _ := os.Stat(path)
		empty := st.Size()
		start := time.Now()
		for i := 0; i < pendingObjects; i += 1000 {
			err := store.Update(func(tx *state.Tx) error {
				for j := i; j < i+1000; j++ {
					if err := tx.PutWait(pendingKey(j), timed.State{Holding: true, Since: now}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		putNs = float64(time.Since(start).Nanoseconds()) / pendingObjects
		st, _ = os.Stat(path)
		fileBytes = float64(st.Size()-empty) / pendingObjects
		before := heapInUse()
		book := newWaitBook(false)
		kept := map[string]timed.State{}
		if err := store.View(func(tx *state.Tx) error {
			return tx.ForEachWait(func(key string, s timed.State, _ bool) error { kept[key] = s; return nil })
		}); err != nil {
			b.Fatal(err)
		}
		book.setSpecs(map[string]timed.Spec{"stuck": spec})
		book.load(kept)
		kept = nil
		perObject = float64(int64(heapInUse())-int64(before)) / pendingObjects
		if c := book.counted()["stuck"]; c.pending != pendingObjects {
			b.Fatalf("pending %d after load, want %d", c.pending, pendingObjects)
		}
		runtime.KeepAlive(book)
		store.Close()
	}
	b.ReportMetric(fileBytes, "filebytes/wait")
	b.ReportMetric(putNs, "ns/put")
	b.ReportMetric(perObject, "B/pending")
	b.ReportMetric(0, "ns/op")
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

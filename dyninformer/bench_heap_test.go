package dyninformer

import (
	"runtime"
	"testing"
)

// BenchmarkCachedObjectHeap measures the heap an informer's cache keeps per
// object: 10 000 Deployments decoded from list pages and held, the live heap
// after a collection divided among them, and what of it is not the bytes of
// their JSON (managedFields cut out): the Object and its strings.
//
//	go test ./dyninformer -run '^$' -bench CachedObjectHeap -count 3
func BenchmarkCachedObjectHeap(b *testing.B) {
	const n, page = 10000, 500
	pages := make([][]byte, n/page)
	for i := range pages {
		pages[i] = benchPage(page)
	}
	for b.Loop() {
		held := make([]*Object, 0, n)
		before := liveHeap()
		for _, p := range pages {
			var l List
			if err := parseList(p, &l, nil); err != nil {
				b.Fatal(err)
			}
			for _, it := range l.Items {
				held = append(held, it.(*Object))
			}
		}
		after := liveHeap()
		var raw int
		for _, o := range held {
			raw += cap(o.raw)
		}
		per := float64(after-before) / n
		b.ReportMetric(per, "heapB/object")
		b.ReportMetric(per-float64(raw)/n, "heapB/object-beyond-JSON")
		runtime.KeepAlive(held)
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

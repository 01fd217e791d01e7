package action

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// BenchmarkGroupPerEvent is the grouping stage's cost per event: b.N events
// (run it with -benchtime=1000000x) over 10 000 objects grouped by name, so
// 10 000 groups open at once; then the clock passes the wait and every group
// is formed and delivered to an instant receiver. One op is one event, from
// Enqueue to its grouped delivery.
func BenchmarkGroupPerEvent(b *testing.B) {
	const groups = 10_000
	ds := make([]*event.Delivery, b.N)
	seen := newFakeClock().Now()
	for i := range ds {
		ds[i] = gdelivery("a", fmt.Sprint("cm", i%groups), i/groups, event.Update, seen)
	}
	var delivered atomic.Int64
	send := senderFunc(func(_ context.Context, d *event.Delivery) error { delivered.Add(int64(len(d.Members))); return nil })
	fc := newFakeClock()
	g := &GroupOptions{By: []string{"name"}, Wait: 30 * time.Second, Interval: 5 * time.Minute, Max: 100}
	q := NewQueue("bench", send, QueueOptions{Size: b.N + 1, Concurrency: 4, Logger: quiet, Clock: fc, Group: g})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = q.Run(ctx, time.Minute); close(done) }()
	b.ReportAllocs()
	b.ResetTimer()
	for _, d := range ds {
		q.Enqueue(d)
	}
	fc.Step(time.Minute)
	for delivered.Load() < int64(b.N) {
		runtime.Gosched()
	}
	b.StopTimer()
	cancel()
	<-done
	b.ReportMetric(float64(q.Stats().Groups), "deliveries")
}

// BenchmarkGroupOpenMemory measures what an open group holds: 10 000 groups
// of one event each, the heap after a GC before and after they are enqueued
// (the deliveries themselves made beforehand). One op is the 10 000 groups;
// heapB/group is what stays on the heap per open group.
func BenchmarkGroupOpenMemory(b *testing.B) {
	const groups = 10_000
	seen := newFakeClock().Now()
	var perGroup float64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		ds := make([]*event.Delivery, groups)
		for i := range ds {
			ds[i] = gdelivery("a", fmt.Sprint("cm", i), 0, event.Add, seen)
		}
		g := &GroupOptions{By: []string{"namespace", "name"}, Wait: time.Hour, Interval: time.Hour, Max: 100}
		q := NewQueue("bench", senderFunc(func(context.Context, *event.Delivery) error { return nil }), QueueOptions{Size: groups, Logger: quiet, Clock: newFakeClock(), Group: g})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		for _, d := range ds {
			q.Enqueue(d)
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		perGroup = float64(after.HeapAlloc-before.HeapAlloc) / groups
		runtime.KeepAlive(q)
		runtime.KeepAlive(ds)
		b.StartTimer()
	}
	b.ReportMetric(perGroup, "heapB/group")
}

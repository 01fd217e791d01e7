package action

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// BenchmarkQueueThroughput pushes 100 000 events over 1 000 objects through one
// queue (concurrency 4) to an instant receiver. One op is the whole batch;
// events/s and allocs/event are reported per event.
func BenchmarkQueueThroughput(b *testing.B) {
	const events, objects = 100_000, 1_000
	ds := make([]*event.Delivery, events)
	for i := range ds {
		ds[i] = delivery(fmt.Sprint("obj", i%objects), i/objects)
	}
	var delivered atomic.Int64
	send := senderFunc(func(context.Context, *event.Delivery) error { delivered.Add(1); return nil })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	for b.Loop() {
		q := NewQueue("bench", send, QueueOptions{Size: events, Concurrency: 4, Logger: quiet})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = q.Run(ctx, time.Minute); close(done) }()
		delivered.Store(0)
		for _, d := range ds {
			if !q.Enqueue(d) {
				b.Fatal("enqueue refused")
			}
		}
		for delivered.Load() < events {
			runtime.Gosched()
		}
		cancel()
		<-done
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&ms1)
	total := float64(b.N) * events
	b.ReportMetric(total/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/total, "allocs/event")
}

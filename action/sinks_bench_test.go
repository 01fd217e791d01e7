package action

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// benchSink pushes events through one queue (concurrency 4) to s: to one
// object (each event waits for the one before) and to 100 objects. One op is
// the whole batch; events/s is reported per event.
func benchSink(b *testing.B, s Sender) {
	const events = 2000
	for _, objects := range []int{1, 100} {
		b.Run(fmt.Sprintf("objects=%d", objects), func(b *testing.B) {
			ds := make([]*event.Delivery, events)
			b.ReportAllocs()
			start := time.Now()
			for round := 0; b.Loop(); round++ {
				for i := range ds {
					// New ids every round, so that JetStream's duplicate window drops none.
					ds[i] = cmDelivery(fmt.Sprint("obj", i%objects), round*events+i)
				}
				q := NewQueue("bench", s, QueueOptions{Size: events, Concurrency: 4, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { _ = q.Run(ctx, time.Minute); close(done) }()
				for _, d := range ds {
					q.Enqueue(d)
				}
				for q.Stats().Delivered+q.Stats().Failed < events {
					time.Sleep(time.Millisecond)
				}
				cancel()
				<-done
				if f := q.Stats().Failed; f > 0 {
					b.Fatalf("%d deliveries failed", f)
				}
			}
			b.ReportMetric(float64(b.N)*events/time.Since(start).Seconds(), "events/s")
		})
	}
}

// BenchmarkKafkaSink produces to an in-process kfake cluster, acks all.
func BenchmarkKafkaSink(b *testing.B) {
	c := newKfake(b, 0)
	benchSink(b, buildAction(b, fmt.Sprintf(`kafka: {brokers: [%q], topic: ns-events}`, c.ListenAddrs()[0])))
}

// BenchmarkNATSSink publishes to an embedded JetStream server on file
// storage, waiting for each acknowledgement.
func BenchmarkNATSSink(b *testing.B) {
	ns := startNATS(b)
	ns.stream(b)
	benchSink(b, buildAction(b, fmt.Sprintf(`nats: {url: %q, subject: "dw.{{.name}}"}`, ns.url())))
}

// BenchmarkCloudEvents is the per-event cost of the hand-written CloudEvents
// encodings: a structured-mode body, and the binary-mode attributes.
func BenchmarkCloudEvents(b *testing.B) {
	d := cmDelivery("a", 0)
	b.Run("structured", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = ceStructured(d, testSource)
		}
	})
	b.Run("binary", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, a := range ceAttributes(d, testSource) {
				_ = ceHeaderValue(a.value)
			}
		}
	})
}

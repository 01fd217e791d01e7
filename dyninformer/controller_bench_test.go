package dyninformer

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// BenchmarkInformerHandOff hands watch events from a watch to the handler
// through the informer: newController's (the handler called from the FIFO's
// pop) against client-go's shared informer with one handler (a listener's
// goroutines and buffer between the pop and the handler), what each watch had
// before. cpu-ns/event is the process's CPU per event, the figure that counts
// on a machine others share:
//
//	go test ./dyninformer -run '^$' -bench InformerHandOff -benchmem -count 6 > f; benchstat -col /impl f
func BenchmarkInformerHandOff(b *testing.B) {
	objs := make([]*Object, 64)
	for i := range objs {
		objs[i] = testObject(b, fmt.Sprintf("ns/o%d", i), fmt.Sprintf("u%d", i), fmt.Sprint(100+i))
	}
	run := func(b *testing.B, start func(context.Context, cache.ListerWatcher, cache.ResourceEventHandler) func() bool) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w := watch.NewFakeWithChanSize(1024, false)
		lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
				return &List{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
			},
			WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return w, nil },
		}, &scriptedSource{})
		var handed atomic.Int64
		count := func() { handed.Add(1) }
		synced := start(ctx, lw, cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(any, bool) { count() }, UpdateFunc: func(any, any) { count() }, DeleteFunc: func(any) { count() },
		})
		for !synced() {
			time.Sleep(time.Millisecond)
		}
		b.ReportAllocs()
		cpu0, n := threadCPU(), 0
		for b.Loop() {
			w.Modify(objs[n%len(objs)])
			n++
		}
		for handed.Load() < int64(n) {
			time.Sleep(50 * time.Microsecond)
		}
		b.ReportMetric(float64(threadCPU()-cpu0)/float64(n), "cpu-ns/event")
	}
	b.Run("impl=controller", func(b *testing.B) {
		run(b, func(ctx context.Context, lw cache.ListerWatcher, h cache.ResourceEventHandler) func() bool {
			_, ctrl := newController(lw, 0, "bench", nil, h, nil)
			go ctrl.RunWithContext(ctx)
			return func() bool { return hasSynced(ctrl) }
		})
	})
	b.Run("impl=shared", func(b *testing.B) {
		run(b, func(ctx context.Context, lw cache.ListerWatcher, h cache.ResourceEventHandler) func() bool {
			inf := cache.NewSharedIndexInformerWithOptions(lw, &Object{}, cache.SharedIndexInformerOptions{ObjectDescription: "bench"})
			reg, err := inf.AddEventHandler(h)
			if err != nil {
				b.Fatal(err)
			}
			go inf.RunWithContext(ctx)
			return reg.HasSynced
		})
	})
}

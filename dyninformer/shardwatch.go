package dyninformer

import (
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// shardFilterWatch passes on the events keep accepts. Unlike watch.Filter,
// its goroutine ends when Stop is called even if nobody reads any more (the
// reflector stops reading, then calls Stop), so a stopped sharded informer
// leaves nothing behind.
type shardFilterWatch struct {
	in   watch.Interface
	out  chan watch.Event
	done chan struct{}
	once sync.Once
	keep func(watch.Event) bool
}

func newShardFilterWatch(in watch.Interface, keep func(watch.Event) bool) *shardFilterWatch {
	f := &shardFilterWatch{in: in, out: make(chan watch.Event), done: make(chan struct{}), keep: keep}
	go f.loop()
	return f
}

// ResultChan is the filtered events; closed when the watch ends or stops.
func (f *shardFilterWatch) ResultChan() <-chan watch.Event { return f.out }

// Stop stops the watch underneath and ends the filter's goroutine.
func (f *shardFilterWatch) Stop() {
	f.once.Do(func() {
		close(f.done)
		f.in.Stop()
	})
}

func (f *shardFilterWatch) loop() {
	defer close(f.out)
	for {
		select {
		case <-f.done:
			return
		case ev, ok := <-f.in.ResultChan():
			if !ok {
				return
			}
			if !f.keep(ev) {
				continue
			}
			select {
			case f.out <- ev:
			case <-f.done:
				return
			}
		}
	}
}

package dyninformer

import (
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// touchWatch passes a watch's events on and calls touch with each (bookmarks
// included). Unlike watch.Filter, its goroutine ends when Stop is called even
// if nobody reads any more, so that stopped informers leave nothing behind.
type touchWatch struct {
	in    watch.Interface
	out   chan watch.Event
	done  chan struct{}
	once  sync.Once
	touch func(watch.Event)
}

func newTouchWatch(in watch.Interface, touch func(watch.Event)) *touchWatch {
	t := &touchWatch{in: in, out: make(chan watch.Event), done: make(chan struct{}), touch: touch}
	go t.loop()
	return t
}

func (t *touchWatch) ResultChan() <-chan watch.Event { return t.out }

func (t *touchWatch) Stop() {
	t.once.Do(func() {
		close(t.done)
		t.in.Stop()
	})
}

func (t *touchWatch) loop() {
	defer close(t.out)
	for {
		select {
		case <-t.done:
			return
		case ev, ok := <-t.in.ResultChan():
			if !ok {
				return
			}
			t.touch(ev)
			select {
			case t.out <- ev:
			case <-t.done:
				return
			}
		}
	}
}

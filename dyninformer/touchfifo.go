package dyninformer

import "k8s.io/client-go/tools/cache"

// watchTouch is what an informer's reflector tells besides the changes
// themselves. Either func may be nil.
type watchTouch struct {
	// seen: the watch delivered an event or a bookmark, or a list completed
	// (the API server answers: /readyz's stall check).
	seen func()
	// listed: a list completed at this resourceVersion (a paged list's, or
	// the snapshot a watch-list streamed, which its initial-events-end
	// bookmark ends), before the FIFO takes it.
	listed func(rv string)
}

// touchFIFO is an informer's FIFO as its reflector sees it: each change the
// watch brings (Add, Update, Delete), each bookmark and each complete list
// (Replace) is told to t, then handed to the FIFO, in the reflector's
// goroutine. A watch-list's initial events go to the reflector's temporary
// store, not here, and its Replace ends them.
//
// This is where the watch's liveness is read: a goroutine that passed every
// event on from the watch to the reflector, to note it, cost one more
// hand-off per event (a channel send and, when the other side sleeps, a
// wake-up), about a tenth of an initial sync's CPU at 100 000 small objects.
// The methods client-go asks for by interface (Pop, PopBatch, Bookmark,
// HasSyncedChecker, …) are the RealFIFO's.
type touchFIFO struct {
	*cache.RealFIFO
	t watchTouch
}

func (f *touchFIFO) seen() {
	if f.t.seen != nil {
		f.t.seen()
	}
}

func (f *touchFIFO) Add(obj any) error {
	f.seen()
	return f.RealFIFO.Add(obj)
}

func (f *touchFIFO) Update(obj any) error {
	f.seen()
	return f.RealFIFO.Update(obj)
}

func (f *touchFIFO) Delete(obj any) error {
	f.seen()
	return f.RealFIFO.Delete(obj)
}

// Bookmark is called by the reflector for every bookmark of a watch (not of
// a watch-list's initial events: those end in Replace).
func (f *touchFIFO) Bookmark(rv string) error {
	f.seen()
	return f.RealFIFO.Bookmark(rv)
}

func (f *touchFIFO) Replace(items []any, rv string) error {
	f.seen()
	if f.t.listed != nil {
		f.t.listed(rv)
	}
	return f.RealFIFO.Replace(items, rv)
}

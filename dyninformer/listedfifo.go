package dyninformer

import "k8s.io/client-go/tools/cache"

// listedFIFO is an informer's FIFO as its reflector sees it: each complete
// list (Replace: a paged list's, or the snapshot a watch-list streamed,
// which its initial-events-end bookmark ends) is told to listed with its
// resourceVersion, in the reflector's goroutine, before the FIFO takes it.
// The methods client-go asks for by interface (Pop, PopBatch, Bookmark,
// HasSyncedChecker, …) are the RealFIFO's.
type listedFIFO struct {
	*cache.RealFIFO
	listed func(rv string) // nil: nobody asks
}

func (f *listedFIFO) Replace(items []any, rv string) error {
	if f.listed != nil {
		f.listed(rv)
	}
	return f.RealFIFO.Replace(items, rv)
}

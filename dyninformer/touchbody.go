package dyninformer

import (
	"context"
	"io"
	"net/http"
)

// A watch's liveness (Status.LastEvent, /readyz's stall check) is when its
// response body last brought bytes: an event, a bookmark, a watch-list's
// initial events (which the reflector keeps in a store of its own until the
// list ends), an error event. It is noted as the body is read, in the
// goroutine of client-go's that reads it, at each read that brings bytes
// (one per buffer's fill, not per event): a goroutine that passed every event
// on from the watch to the reflector to note it cost a hand-off per event,
// about a tenth of an initial sync's CPU at 100 000 small objects. Only a
// watch's 200 response is followed: a refused watch, or a list, is no sign
// that the watch lives.

// touchKey is the context key of a watch's touch.
type touchKey struct{}

// withTouch returns ctx carrying touch: a watch opened with it calls touch
// each time its response body brings bytes.
func withTouch(ctx context.Context, touch func()) context.Context {
	return context.WithValue(ctx, touchKey{}, touch)
}

// touchBodies is the client's transport wrapper that follows the bodies of
// the requests that carry a touch.
func touchBodies(rt http.RoundTripper) http.RoundTripper {
	return touchTransport{rt}
}

type touchTransport struct{ rt http.RoundTripper }

func (t touchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusOK {
		if touch, ok := req.Context().Value(touchKey{}).(func()); ok {
			resp.Body = &touchBody{ReadCloser: resp.Body, touch: touch}
		}
	}
	return resp, err
}

// touchBody calls touch at each read that brings bytes.
type touchBody struct {
	io.ReadCloser
	touch func()
}

func (b *touchBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.touch()
	}
	return n, err
}

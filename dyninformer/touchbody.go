package dyninformer

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/tidwall/gjson"
)

// A watch's liveness (Status.LastEvent, /readyz's stall check) is when it
// last delivered an event or a bookmark: an object's change, a bookmark, a
// watch-list's initial events (which the reflector keeps in a store of its
// own until the list ends), not an ERROR event (a watch the server answers
// with nothing but errors is as good as none). It is noted as the response
// body is split into frames, in the goroutine of client-go's that reads it:
// a goroutine that passed every event on from the watch to the reflector to
// note it cost a hand-off per event, about a tenth of an initial sync's CPU
// at 100 000 small objects. The client's transport marks the body of a
// watch's 200 response, when the request's context carries a touch
// (withTouch); the framer takes the touch from it. A body that reaches the
// framer wrapped in another (an http.Client Timeout's) is followed at each
// read that brings bytes instead. A refused watch, or a list, is no sign
// that the watch lives.

// touchKey is the context key of a watch's touch.
type touchKey struct{}

// withTouch returns ctx carrying touch: a watch opened with it calls touch
// per frame of its response that is no ERROR event.
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
		if touch, ok := req.Context().Value(touchKey{}).(func()); ok && isWatch(req) {
			resp.Body = &touchBody{ReadCloser: resp.Body, touch: touch}
		}
	}
	return resp, err
}

// WrappedRoundTripper lets client-go reach the transport beneath (to cancel
// a request), as its own wrappers do.
func (t touchTransport) WrappedRoundTripper() http.RoundTripper { return t.rt }

func isWatch(req *http.Request) bool {
	w := req.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

// touchBody is a watch's body and its touch. The framer takes the touch
// (framed) and calls it per frame that is no ERROR; a body read by anything
// else calls it at each read that brings bytes.
type touchBody struct {
	io.ReadCloser
	touch  func()
	framed bool // set before the first Read, by the goroutine that reads
}

func (b *touchBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 && !b.framed {
		b.touch()
	}
	return n, err
}

// frameTouch returns the touch of a watch's body, which the framer then
// calls per frame (nil: r is no watch's body of ours).
func frameTouch(r io.ReadCloser) func() {
	b, ok := r.(*touchBody)
	if !ok {
		return nil
	}
	b.framed = true
	return b.touch
}

// errorFrame reports whether a watch frame is an ERROR event: as the API
// server writes events its type comes first; any other frame is asked.
func errorFrame(frame []byte) bool {
	const head = `{"type":"`
	if bytes.HasPrefix(frame, []byte(head)) {
		return bytes.HasPrefix(frame[len(head):], []byte(`ERROR"`))
	}
	return gjson.GetBytes(frame, "type").Str == "ERROR"
}

package dyninformer

import (
	"fmt"
	"io"
)

// jsonFramer splits a watch stream into its JSON objects in one pass. With
// hints, a frame it vouches for carries where its object's metadata and the
// containers in it are (see hints.go), so that the codec reads the metadata
// without scanning those bytes again.
type jsonFramer struct{ hints bool }

func (j jsonFramer) NewFrameReader(r io.ReadCloser) io.ReadCloser {
	return &frameReader{r: r, hints: j.hints, touch: frameTouch(r)}
}
func (jsonFramer) NewFrameWriter(w io.Writer) io.Writer { return w }

// maxFrame bounds one watch frame; the API server limits objects to a few MiB.
const maxFrame = 64 << 20

// frameReader returns one JSON object of the stream per Read (the contract of
// client-go's frame readers): if it does not fit, as much as fits and
// io.ErrShortBuffer, and the rest on the next Reads. It scans each byte once,
// and remembers how far it got when it has to read more.
type frameReader struct {
	r          io.ReadCloser
	buf        []byte
	start, end int // buf[start:end] is read and not yet returned
	pos, depth int // scan state of the frame at start: next byte, nesting
	inString   bool
	escaped    bool // in a string, the byte at pos is escaped
	// scanned counts the bytes scan has looked at, for the test that bounds
	// the work per byte of the stream.
	scanned int
	rest    []byte // the part of the last frame that did not fit
	err     error
	// What the scan saw of the frame at start, offsets from start: commas
	// between its members, and the end of the last container that closed
	// as one of its members' values (0: none yet).
	commas, closed int
	alt            []byte // an unvouched frame, a space before it
	// hints is set when vouched frames carry a trailer of spans (hints.go);
	// spans is what the scan saw of the frame at start.
	hints bool
	spans frameSpans
	trail []byte // the trailer of the frame in rest, after it
	// trailBuf is trail's storage, so that a reader's trailers cost no
	// allocation of their own.
	trailBuf [trailerMax]byte
	// touch is the watch's liveness, called per frame that is no ERROR
	// event (touchbody.go); nil: none.
	touch func()
}

func (f *frameReader) Close() error { return f.r.Close() }

func (f *frameReader) Read(p []byte) (int, error) {
	if len(f.rest) > 0 {
		n := copy(p, f.rest)
		f.rest = f.rest[n:]
		if len(f.rest) > 0 {
			return n, io.ErrShortBuffer
		}
		f.rest = nil
		return n, nil
	}
	frame, err := f.next()
	if err != nil {
		return 0, err
	}
	if len(f.trail) > 0 && len(frame)+len(f.trail) <= len(p) {
		// The trailer goes only with a frame that fits whole: one read in
		// pieces comes without it (and is read without hints).
		n := copy(p, frame)
		return n + copy(p[n:], f.trail), nil
	}
	n := copy(p, frame)
	if n < len(frame) {
		f.rest = frame[n:] // buf is not refilled before rest is drained
		return n, io.ErrShortBuffer
	}
	return n, nil
}

// next returns the next frame, a slice of buf valid until the next call.
func (f *frameReader) next() ([]byte, error) {
	for {
		if e, ok := f.scan(); ok {
			frame := f.buf[f.start:e]
			f.trail = f.trailBuf[:0]
			if !f.lastIsContainer(frame) {
				f.alt = append(append(f.alt[:0], ' '), frame...)
				frame = f.alt
			} else if f.hints {
				f.trail = f.spans.trailer(f.trail)
			}
			f.start, f.pos, f.depth, f.commas, f.closed = e, e, 0, 0, 0
			f.spans = frameSpans{}
			if f.touch != nil && !errorFrame(frame) {
				f.touch()
			}
			return frame, nil
		}
		if f.err != nil {
			if f.err == io.EOF && f.pos > f.start {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, f.err
		}
		if err := f.fill(); err != nil {
			return nil, err
		}
	}
}

// scan goes on scanning the frame at start; it returns the frame's end when
// the frame is complete. It never goes back over what an earlier call
// scanned: the scan state (in a string, escaped, nesting) carries over, so a
// frame read in pieces costs its length, whatever its runs of backslashes.
func (f *frameReader) scan() (int, bool) {
	from := f.pos
	e, ok := f.scanFrame()
	if ok {
		f.scanned += e - from
	} else {
		f.scanned += f.end - from
	}
	return e, ok
}

func (f *frameReader) scanFrame() (int, bool) {
	b := f.buf[:f.end]
	if f.pos == f.start { // a new frame: skip what separates frames
		for f.start < f.end && isSpace(b[f.start]) {
			f.start++
		}
		f.pos = f.start
	}
	i := f.pos
	if f.inString { // the string the last read ended in
		e, escaped := stringEnd(b, i, f.escaped)
		if e < 0 {
			f.escaped = escaped
			f.pos = f.end
			return 0, false
		}
		f.inString, f.escaped = false, false
		i = e
	}
	// The scan state lives in locals in the loop, and goes back to f when
	// it returns.
	depth, commas, closed := f.depth, f.commas, f.closed
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			// Most strings have no escapes: the first quote or backslash,
			// eight bytes at a time, ends them.
			if j := stringStop(b, i+1); j < len(b) && b[j] == '"' {
				i = j
				continue
			}
			e, escaped := stringEnd(b, i+1, false)
			if e < 0 {
				f.inString, f.escaped = true, escaped
				f.pos, f.depth, f.commas, f.closed = len(b), depth, commas, closed
				return 0, false
			}
			i = e - 1
		case '{', '[':
			depth++
			if f.hints && depth >= 3 {
				f.spans.opened(depth, i-f.start)
			}
		case '}', ']':
			depth--
			if depth == 0 {
				f.pos, f.depth, f.commas, f.closed = i+1, depth, commas, closed
				return i + 1, true
			}
			if depth == 1 {
				closed = i + 1 - f.start
			} else if f.hints && depth <= 3 {
				f.spans.closed(depth, i+1-f.start)
			}
		case ',':
			if depth == 1 {
				commas++
			}
		case ' ', '\n', '\r', '\t', ':':
		default:
			if depth == 0 {
				f.err = fmt.Errorf("watch stream: expected a JSON object, got %q", b[i])
				f.pos, f.depth, f.commas, f.closed = i, depth, commas, closed
				return 0, false
			}
		}
	}
	f.pos, f.depth, f.commas, f.closed = len(b), depth, commas, closed
	return 0, false
}

// lastIsContainer reports whether frame (an object) has two members and the
// second's value is an object or array that nothing but space follows: a
// watch event as the API server writes it, {"type":T,"object":{…}}. Such a
// frame is returned as it is; any other starts with a space, which a frame
// never does otherwise (the space between frames is skipped). The codec
// reads an event that starts with its '{' without looking for the object's
// end again: the frame's last '}' but one (see decodeWatchEvent).
func (f *frameReader) lastIsContainer(frame []byte) bool {
	if frame[0] != '{' || f.commas != 1 || f.closed == 0 {
		return false
	}
	for _, c := range frame[f.closed : len(frame)-1] {
		if !isSpace(c) {
			return false
		}
	}
	return true
}

// fill reads more of the stream, first moving the frame in progress to the
// front of buf, growing it when the frame fills it.
func (f *frameReader) fill() error {
	if f.start > 0 {
		// The frame moves to the front: its spans are offsets from its
		// start, and stay right.
		n := copy(f.buf, f.buf[f.start:f.end])
		f.pos -= f.start
		f.end, f.start = n, 0
	}
	if f.end == len(f.buf) {
		if len(f.buf) >= maxFrame {
			return fmt.Errorf("watch stream: a frame larger than %d bytes", maxFrame)
		}
		f.buf = append(f.buf, make([]byte, max(len(f.buf), 32<<10))...)
	}
	n, err := f.r.Read(f.buf[f.end:])
	f.end += n
	f.err = err
	return nil
}

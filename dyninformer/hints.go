package dyninformer

import (
	"encoding/binary"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/watch"
)

// The framer scans every byte of a watch frame to find its end; the codec
// then reads the object's metadata, which would scan its containers again
// (managedFields alone is half of a typical object). So the framer notes, as
// it goes, where the first container of the event's object (its metadata, as
// the API server writes objects) and the containers directly in it begin and
// end, and hands the spans on with the frame, after its JSON (a trailer). The
// codec checks them against the bytes and jumps over those containers; a
// frame without a trailer, or whose spans do not fit, is read as before.
//
// client-go decodes a watch event in two calls, the event and then its
// object's bytes, and only the first sees the trailer: the first builds the
// Object and hands it to the second (handOff, takeHanded).

// maxSpans bounds the containers of one metadata object that a frame's
// spans name; a metadata object with more is read without them.
const maxSpans = 8

// trailerMax is the size of the longest trailer: the metadata's span and
// maxSpans more, their count and trailerMark.
const trailerMax = 8*(maxSpans+1) + 2

// trailerMark ends a frame's trailer: a byte valid UTF-8 (so JSON) never has.
const trailerMark = 0xff

// frameSpans is what the framer's scan saw of a frame's event object, as
// offsets from the frame's start: the object's first container (md) and the
// containers in it.
type frameSpans struct {
	md    [2]int32
	inner [maxSpans][2]int32
	n     int
	state uint8 // spansNone, spansInMD, spansDone or spansGivenUp
}

const (
	spansNone = iota
	spansInMD
	spansDone
	spansGivenUp
)

// opened notes a container opened at offset at, depth its depth once open
// (the frame is 1, the event's object 2).
func (s *frameSpans) opened(depth, at int) {
	switch {
	case depth == 3 && s.state == spansNone:
		s.md[0], s.state = int32(at), spansInMD
	case depth == 4 && s.state == spansInMD:
		if s.n == maxSpans {
			s.state = spansGivenUp
			return
		}
		s.inner[s.n][0] = int32(at)
	}
}

// closed notes a container closed, ending at offset end, depth the depth
// after it closed.
func (s *frameSpans) closed(depth, end int) {
	if s.state != spansInMD {
		return
	}
	switch depth {
	case 3:
		s.inner[s.n][1] = int32(end)
		s.n++
	case 2:
		s.md[1], s.state = int32(end), spansDone
	}
}

// trailer appends the spans to b as the trailer of their frame: each span as
// two little-endian uint32, the metadata first, then the number of inner
// spans and trailerMark. Nothing when the scan saw no whole metadata.
func (s *frameSpans) trailer(b []byte) []byte {
	if s.state != spansDone {
		return b
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(s.md[0]))
	b = binary.LittleEndian.AppendUint32(b, uint32(s.md[1]))
	for _, sp := range s.inner[:s.n] {
		b = binary.LittleEndian.AppendUint32(b, uint32(sp[0]))
		b = binary.LittleEndian.AppendUint32(b, uint32(sp[1]))
	}
	return append(b, byte(s.n), trailerMark)
}

// objSpans are a frame's spans as offsets into its object's bytes.
type objSpans struct {
	md    [2]int
	inner [maxSpans][2]int // the first n
	n     int
}

// cutTrailer splits a frame into its JSON and the spans of its trailer, if
// it has one. The spans are not checked yet (see spansIn).
func cutTrailer(frame []byte) ([]byte, []byte, bool) {
	n := len(frame)
	if n < 2 || frame[n-1] != trailerMark {
		return frame, nil, false
	}
	k := int(frame[n-2])
	size := 8*(k+1) + 2
	if k > maxSpans || n < size {
		return frame, nil, false
	}
	return frame[:n-size], frame[n-size : n-2], true
}

// spansIn reads the trailer's spans as offsets into obj, the object's span of
// frame, and checks that each is a container of obj, the inner ones in order
// inside the metadata; ok is false otherwise.
func spansIn(frame []byte, trailer []byte, obj [2]int, out *objSpans) bool {
	out.n = 0
	at := func(i int) int { return int(binary.LittleEndian.Uint32(trailer[4*i:])) - obj[0] }
	b := frame[obj[0]:obj[1]]
	isSpan := func(s, e int) bool {
		return 0 < s && s < e && e <= len(b) && (b[s] == '{' || b[s] == '[') && (b[e-1] == '}' || b[e-1] == ']')
	}
	out.md = [2]int{at(0), at(1)}
	if !isSpan(out.md[0], out.md[1]) || b[out.md[0]] != '{' {
		return false
	}
	prev := out.md[0] + 1
	for i := 2; i+1 < len(trailer)/4; i += 2 {
		s, e := at(i), at(i+1)
		if !isSpan(s, e) || s < prev || e >= out.md[1] {
			return false
		}
		out.inner[out.n] = [2]int{s, e}
		out.n++
		prev = e
	}
	return true
}

// handed holds the Objects that decodeWatchEvent built for the object
// decode that follows it, by the address of the object's bytes (in the
// watch decoder's buffer, so unique among the watches decoding at once).
// Every event decode claims the address of its object's bytes (handOff),
// with an Object or without, so that one handed by an earlier event decode
// whose object decode did not follow is never taken for another event's
// bytes; and there are never more than maxHanded, so that such Objects are
// not kept for ever either.
var handed = struct {
	sync.Mutex
	m map[*byte]handedObject
}{m: map[*byte]handedObject{}}

// maxHanded bounds handed: an Object is there only between the two decode
// calls of its event, so it holds at most one per watch decoding at once;
// past the bound what is there is dropped (and read again by scanning).
const maxHanded = 4096

type handedObject struct {
	n int // len of the bytes it was built from
	o *Object
	// other: the object is another shard's (o is nil).
	other bool
}

// handOff claims raw, the object bytes (frame[obj]) of an event just
// decoded, for takeHanded: with the Object built with its spans when the
// frame has a trailer (not for an ERROR event, whose object is a Status),
// or with none; with a shard, an object of another shard is handed as that
// (see otherShard). When the spans do not fit, nothing is handed: the
// object decode then reads raw as it always has.
func handOff(typ string, raw []byte, frame, trailer []byte, obj [2]int, shard *Shard) {
	if len(raw) == 0 {
		return
	}
	var h handedObject
	var sp objSpans
	if typ != string(watch.Error) && trailer != nil && spansIn(frame, trailer, obj, &sp) {
		o, err := parseObjectSpans(raw, "", "", shard, &sp)
		h = handedObject{n: len(raw), o: o, other: err == errOtherShard}
	}
	key := unsafe.SliceData(raw)
	handed.Lock()
	defer handed.Unlock()
	if h.o == nil && !h.other {
		delete(handed.m, key)
		return
	}
	if len(handed.m) >= maxHanded {
		clear(handed.m)
	}
	handed.m[key] = h
}

// takeHanded returns, once, the Object handOff built from data, or nil;
// other is true when handOff found it another shard's.
func takeHanded(data []byte) (o *Object, other bool) {
	if len(data) == 0 {
		return nil, false
	}
	key := unsafe.SliceData(data)
	handed.Lock()
	h, ok := handed.m[key]
	if ok {
		delete(handed.m, key)
	}
	handed.Unlock()
	if !ok || h.n != len(data) {
		return nil, false
	}
	return h.o, h.other
}

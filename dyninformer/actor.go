package dyninformer

import (
	"bytes"
	"hash/maphash"
	"strings"
	"sync"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// A change's actor is the managedFields entry of the change: the one with the
// latest time. The API server writes times to the second, so two writers
// within one second tie; the tie is broken by the old object's entries at its
// own latest time: the entry of the change is the one the old object does not
// hold as it is (another time or other fields, or none of that writer), the
// others are older changes of that second. Entries at an earlier time than
// the old object's latest cannot tie with a newer change, so an Object keeps
// no more than its latest entries, as stamps: an interned writer and a hash.

// stamp is one managedFields entry as the choice of an actor needs it: who
// wrote it, and a hash of the entry's bytes (writer, time and fieldsV1 alike),
// which tells an entry rewritten from the one an older state held.
type stamp struct {
	w    *writer
	hash uint64
}

// writer is who wrote an entry. Writers are interned (internWriter): every
// object a manager wrote last shares one. An object whose latest time several
// entries share (a tie) has a writer of its own instead, with no name, whose
// tie holds their stamps.
type writer struct {
	manager, operation, subresource string
	tie                             []stamp
	// chosen is the stamp of tie that made the change to the object's
	// state, once an update chose it (until then the last): a delete's
	// actor, when the state before is gone. Only the handler calls of the
	// object's informer, which are serial, read or write it.
	chosen int
}

// stampSeed seeds the entries' hashes: they are compared within one process
// only, never stored.
var stampSeed = maphash.MakeSeed()

// entryView is one managedFields entry as readStamps finds it: its bytes and
// the spans of the members it reads (JSON strings, quotes included; nil when
// absent).
type entryView struct {
	raw                                 []byte
	manager, operation, subresource, at []byte
}

// readStamps reads a managedFields array: its latest time (Unix seconds; 0
// when no entry has one) and the stamps of the entries that have it, in the
// array's order. The server writes times as RFC 3339 in UTC to the second,
// so the latest is the greatest string and only that one is parsed. One
// stamp, the common case, is returned in buf.
func readStamps(mf []byte, buf *[1]stamp) (int64, []stamp) {
	var views [4]entryView
	at, ok := serverEntries(mf, &views)
	if !ok {
		at = scanEntries(mf, &views)
	}
	if len(at) == 0 {
		return 0, nil
	}
	var latest int64
	if at[0].at != nil { // entries without a time: no error to make
		if t, err := time.Parse(time.RFC3339, stringValue(at[0].at, false)); err == nil {
			latest = t.Unix()
		}
	}
	stamps := buf[:]
	if len(at) > 1 {
		stamps = make([]stamp, len(at))
	}
	for i, e := range at {
		stamps[i] = stamp{
			w:    internWriter(stringValue(e.manager, false), stringValue(e.operation, false), stringValue(e.subresource, false)),
			hash: maphash.Bytes(stampSeed, e.raw),
		}
	}
	return latest, stamps
}

// scanEntries returns the entries of mf at its latest time, reading every
// entry with the scanner: for arrays that are not as the API server writes
// them (serverEntries).
func scanEntries(mf []byte, views *[4]entryView) []entryView {
	at := views[:0]
	p := &scanner{b: mf}
	_ = p.items(func(b []byte) error {
		e, ok := readEntry(b)
		if !ok {
			return nil
		}
		if len(at) > 0 {
			switch c := bytes.Compare(e.at, at[0].at); {
			case c < 0:
				return nil
			case c > 0:
				at = at[:0]
			}
		}
		at = append(at, e)
		return nil
	})
	return at
}

var (
	timeKey        = []byte(`"time":"`)
	serverArray    = []byte(`[{"manager":"`)
	entryOpen      = []byte(`{"manager":"`)
	operationKey   = []byte(`"operation":"`)
	subresourceKey = []byte(`"subresource":"`)
)

// serverEntries returns the entries of mf at its latest time without
// scanning the entries' fieldsV1, for an array as the API server writes it:
// compact, each entry's manager first and its time before its fieldsV1, a
// subresource after it. A member key of an entry (time, operation,
// subresource, or the manager that opens it) is found by its bytes alone: in
// fieldsV1 every key is prefixed ("f:", "k:", "v:", "i:") and in a string a
// quote is escaped. Only the bytes.Index of the times runs through fieldsV1;
// an entry ends where the next one's manager opens, just before its time.
// false: mf is not so written (scanEntries reads it).
func serverEntries(mf []byte, views *[4]entryView) ([]entryView, bool) {
	if !bytes.HasPrefix(mf, serverArray) || mf[len(mf)-1] != ']' {
		return nil, false
	}
	var times [16]int // where each entry's time opens
	n := 0
	for off := 0; ; n++ {
		i := bytes.Index(mf[off:], timeKey)
		if i < 0 {
			break
		}
		if n == len(times) {
			return nil, false
		}
		times[n] = off + i + len(timeKey) - 1
		q := bytes.IndexByte(mf[times[n]+1:], '"')
		if q < 0 {
			return nil, false
		}
		off = times[n] + 1 + q + 1
	}
	at := views[:0]
	for k := range n {
		t := mf[times[k] : times[k]+1+bytes.IndexByte(mf[times[k]+1:], '"')+1] // quotes included, as readEntry's
		c := 1
		if len(at) > 0 {
			if c = bytes.Compare(t, at[0].at); c < 0 {
				continue
			}
		}
		end := len(mf) - 1 // the last entry ends before the array's ']'
		if k+1 < n {
			if end = bytes.LastIndex(mf[:times[k+1]], entryOpen) - 1; end <= times[k] || mf[end] != ',' {
				return nil, false
			}
		}
		e, ok := serverEntry(mf, times[k], end)
		if !ok {
			return nil, false
		}
		if c > 0 {
			at = at[:0]
		}
		e.at = t
		at = append(at, e)
	}
	return at, true
}

// serverEntry is the entry of mf (as serverEntries takes it) whose time
// opens at p and that ends before end.
func serverEntry(mf []byte, p, end int) (entryView, bool) {
	start := bytes.LastIndex(mf[:p], entryOpen)
	if start < 1 || (mf[start-1] != '[' && mf[start-1] != ',') {
		return entryView{}, false
	}
	raw := mf[start:end]
	if len(raw) < 2 || raw[len(raw)-1] != '}' {
		return entryView{}, false
	}
	e := entryView{raw: raw, manager: quoted(raw, len(entryOpen)-1)}
	if i := bytes.Index(raw[:p-start], operationKey); i >= 0 {
		e.operation = quoted(raw, i+len(operationKey)-1)
	}
	// A subresource is the entry's last member, after fieldsV1: a string
	// without escapes (a subresource's name has none; one with a quote
	// escaped is not taken).
	if raw[len(raw)-2] == '"' {
		if q := bytes.LastIndexByte(raw[:len(raw)-2], '"'); q > 0 && raw[q-1] == ':' && bytes.HasSuffix(raw[:q], subresourceKey[:len(subresourceKey)-1]) {
			e.subresource = raw[q : len(raw)-1]
		}
	}
	return e, e.manager != nil
}

// quoted is the JSON string that opens at b[q] (nil: it does not end in b).
func quoted(b []byte, q int) []byte {
	e := skipString(b, q+1)
	if e < 0 {
		return nil
	}
	return b[q:e]
}

// readEntry finds the members of one managedFields entry that name its
// writer and its time; false if it is no JSON object.
func readEntry(b []byte) (entryView, bool) {
	e := entryView{raw: b}
	p := &scanner{b: b}
	if !p.open('{') {
		return e, false
	}
	for {
		key, ok := p.key()
		if !ok {
			break
		}
		s, end := p.value()
		if p.err != nil {
			return e, false
		}
		v := b[s:end]
		if len(v) == 0 || v[0] != '"' {
			continue // fieldsV1 and what is no string
		}
		switch key {
		case "manager":
			e.manager = v
		case "operation":
			e.operation = v
		case "subresource":
			e.subresource = v
		case "time":
			e.at = v
		}
	}
	return e, p.err == nil
}

// maxWriters bounds the interned writers: managers are what clients name
// themselves, and a client that names itself anew on every write must not
// grow the table without end. Past it, a writer is each object's own.
const maxWriters = 4096

var writers = struct {
	sync.Mutex
	m map[writerKey]*writer
}{m: map[writerKey]*writer{}}

type writerKey struct{ manager, operation, subresource string }

// internWriter returns the writer of these names, shared by every object
// that has it. The names may be views of a decoder's buffer: what is kept is
// a copy.
func internWriter(manager, operation, subresource string) *writer {
	k := writerKey{manager, operation, subresource}
	writers.Lock()
	defer writers.Unlock()
	if w := writers.m[k]; w != nil {
		return w
	}
	w := &writer{manager: strings.Clone(manager), operation: strings.Clone(operation), subresource: strings.Clone(subresource)}
	if len(writers.m) < maxWriters {
		writers.m[writerKey{w.manager, w.operation, w.subresource}] = w
	}
	return w
}

// changeStamp picks the entry of the change from a state whose latest entries
// are old to one whose latest entries are cur: cur's one entry, or on a tie
// the one that old does not hold as it is. When several do (two writers
// within one second whose states between were not seen) or none does (a
// writer that wrote the same fields again within the second), the last of
// those in cur's order stands for them: the API server's order says nothing
// of which was later. false when cur is empty.
// It returns the index of the stamp in cur; -1 when cur is empty.
func changeStamp(cur, old []stamp) int {
	if len(cur) < 2 {
		return len(cur) - 1
	}
	for i := len(cur) - 1; i >= 0; i-- {
		if !holds(old, cur[i].hash) {
			return i
		}
	}
	return len(cur) - 1
}

func holds(stamps []stamp, hash uint64) bool {
	for _, s := range stamps {
		if s.hash == hash {
			return true
		}
	}
	return false
}

// actorOf is the event's actor of an entry whose time is at (Unix seconds;
// 0: unknown).
func actorOf(s stamp, at int64) *event.Actor {
	a := &event.Actor{Manager: s.w.manager, Operation: s.w.operation, Subresource: s.w.subresource}
	if at != 0 {
		a.Time = time.Unix(at, 0).UTC().Format(time.RFC3339)
	}
	return a
}

// setStamps keeps the stamps of an object's latest entries in o: one in its
// two fields, several (a tie) in a writer of o's own.
func (o *Object) setStamps(stamps []stamp) {
	switch len(stamps) {
	case 0:
	case 1:
		o.by, o.byHash = stamps[0].w, stamps[0].hash
	default:
		o.by = &writer{tie: append([]stamp(nil), stamps...), chosen: len(stamps) - 1}
	}
}

// stamps returns the stamps of o's latest entries; buf holds the one an
// Object keeps in its fields.
func (o *Object) stamps(buf *[1]stamp) []stamp {
	switch {
	case o.by == nil:
		return nil
	case o.by.tie != nil:
		return o.by.tie
	}
	buf[0] = stamp{o.by, o.byHash}
	return buf[:]
}

// changeActor is who made the change from old (nil: none known, as for a
// delete, whose actor is the last state's latest entry) to o; nil when o's
// managedFields said nothing.
//
// On a tie, an update's choice is kept with the object (writer.chosen): the
// delete that follows names the writer of the last change, not one of the
// second's that the server happens to list last.
func (o *Object) changeActor(old *Object) *event.Actor {
	var a, b [1]stamp
	cur := o.stamps(&a)
	if len(cur) == 0 {
		return nil
	}
	var i int
	switch {
	case old != nil:
		i = changeStamp(cur, old.stamps(&b))
		if o.by.tie != nil {
			o.by.chosen = i
		}
	case o.by.tie != nil:
		i = o.by.chosen
	default:
		i = changeStamp(cur, nil)
	}
	return actorOf(cur[i], o.modified)
}

// ChangeActor is who made the change from an object whose managedFields
// array is old (nil: none, as for a delete: the last state's latest entry)
// to one whose array is cur, chosen as the informers choose it; nil when cur
// holds no entry. dynwatch test calls it on the objects of its files.
func ChangeActor(cur, old []byte) *event.Actor {
	var a, b [1]stamp
	at, stamps := readStamps(cur, &a)
	_, prev := readStamps(old, &b)
	i := changeStamp(stamps, prev)
	if i < 0 {
		return nil
	}
	return actorOf(stamps[i], at)
}

// keepChoice gives a watch's delete, whose object the decoder made anew,
// the choice an update made on a tie of the state it ends (last, the cached
// object): the same entries, by their hashes. deleted is not shared yet.
func keepChoice(deleted, last any) {
	d, ok1 := deleted.(*Object)
	l, ok2 := last.(*Object)
	if !ok1 || !ok2 || d.by == nil || l.by == nil || d.by.tie == nil || l.by.tie == nil || len(d.by.tie) != len(l.by.tie) {
		return
	}
	for i, s := range d.by.tie {
		if l.by.tie[i].hash != s.hash {
			return
		}
	}
	d.by.chosen = l.by.chosen
}

package dyninformer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

var eventTypes = []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error}

// decodeWatchEvent reads a watch frame's type and the span of its object;
// into.Object.Raw is a slice of frame, which the watch decoder turns into an
// Object (a copy) before the next frame is read. A frame as the framer
// vouches for it ({"type":T,"object":{…}}, starting with its '{': see
// lastIsContainer) is read without scanning the object: it ends at the
// frame's last '}' but one. Any other frame's members are skipped with
// skipValue (strings by IndexByte), not parsed.
func decodeWatchEvent(frame []byte, into *metav1.WatchEvent, shard *Shard) error {
	frame, trailer, _ := cutTrailer(frame) // trailer nil: none
	if typ, obj, ok := vouchedEvent(frame); ok {
		if err := setWatchEvent(into, typ, frame, obj); err != nil {
			return err
		}
		handOff(into.Type, into.Object.Raw, frame, trailer, obj, shard)
		return nil
	}
	p := &scanner{b: frame}
	if !p.open('{') {
		return errors.New("watch event: not a JSON object")
	}
	typ := ""
	obj := [2]int{-1, -1}
	for {
		key, ok := p.key()
		if !ok {
			break
		}
		s, e := p.value()
		if p.err != nil {
			break
		}
		switch key {
		case "type":
			typ = stringValue(frame[s:e], false)
		case "object":
			obj = [2]int{s, e}
		}
	}
	if err := setWatchEvent(into, typ, frame, obj); err != nil {
		return err
	}
	handOff(into.Type, into.Object.Raw, nil, nil, obj, shard) // claims its address
	return nil
}

// eventPrefix is how the API server starts a watch event; the type follows.
const eventPrefix = `{"type":"`

// vouchedEvent reads a frame the framer vouched for: its type (no escapes)
// and its object's span, from the bytes around it only.
func vouchedEvent(frame []byte) (string, [2]int, bool) {
	if !bytes.HasPrefix(frame, []byte(eventPrefix)) {
		return "", [2]int{}, false
	}
	rest := frame[len(eventPrefix):]
	q := bytes.IndexByte(rest, '"')
	if q < 0 || bytes.IndexByte(rest[:q], '\\') >= 0 || !bytes.HasPrefix(rest[q:], []byte(`","object":{`)) {
		return "", [2]int{}, false
	}
	s := len(eventPrefix) + q + len(`","object":`)
	e := lastNonSpace(frame[:len(frame)-1]) // before the frame's own '}'
	if e < s || frame[e] != '}' {
		return "", [2]int{}, false
	}
	return str(rest[:q]), [2]int{s, e + 1}, true
}

func setWatchEvent(into *metav1.WatchEvent, typ string, frame []byte, obj [2]int) error {
	// typ is a view of frame, which the next frame overwrites: keep the
	// constant that equals it.
	i := slices.Index(eventTypes, watch.EventType(typ))
	if i < 0 {
		return fmt.Errorf("watch event of unknown type %q", typ)
	}
	into.Type = string(eventTypes[i])
	if obj[0] < 0 || frame[obj[0]] != '{' {
		return errors.New("watch event without an object")
	}
	into.Object = runtime.RawExtension{Raw: frame[obj[0]:obj[1]]}
	return nil
}

// stringValue is the string a JSON value holds ("" for any other value): a
// view of b unless it has escapes, or a copy when copied is true.
func stringValue(b []byte, copied bool) string {
	if len(b) < 2 || b[0] != '"' {
		return ""
	}
	in := b[1 : len(b)-1]
	if bytes.IndexByte(in, '\\') >= 0 {
		var u string
		_ = json.Unmarshal(b, &u)
		return u
	}
	if copied {
		return string(in)
	}
	return str(in)
}

package dyninformer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tidwall/gjson"
)

// rawSerializer is the REST client's content negotiation for JSON that is kept
// as bytes: list pages become Lists of Objects, watch frames WatchEvents whose
// objects become Objects, errors metav1.Status. Nothing is decoded into maps.
// With a shard (the REST client of Client.WithShard), what it decodes holds
// only the shard's objects: see rawCodec.
type rawSerializer struct{ shard *Shard }

func (s rawSerializer) SupportedMediaTypes() []runtime.SerializerInfo {
	c := rawCodec(s)
	return []runtime.SerializerInfo{{
		MediaType:        "application/json",
		MediaTypeType:    "application",
		MediaTypeSubType: "json",
		EncodesAsText:    true,
		Serializer:       c,
		StreamSerializer: &runtime.StreamSerializerInfo{EncodesAsText: true, Serializer: c, Framer: jsonFramer{hints: true}},
	}}
}

func (rawSerializer) EncoderForVersion(e runtime.Encoder, _ runtime.GroupVersioner) runtime.Encoder {
	return e
}

func (rawSerializer) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return d
}

// rawCodec decodes into the types the REST client, the reflector and the
// watch decoder ask for. With a shard, another shard's objects are read no
// further than their metadata and never copied (parseObject): a list page
// leaves them out of its Items, and a watch event's object (decoded into
// nil) is otherShard, which the shard's watch filter drops.
type rawCodec struct{ shard *Shard }

func (rawCodec) Identifier() runtime.Identifier { return "dyninformer-raw-json" }

// Encode writes obj as JSON; list and watch send no bodies, so it only serves
// completeness (and DeleteOptions-style parameters, which are not used).
func (rawCodec) Encode(obj runtime.Object, w io.Writer) error {
	if o, ok := obj.(*Object); ok {
		_, err := w.Write(o.raw)
		return err
	}
	return json.NewEncoder(w).Encode(obj)
}

func (c rawCodec) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	switch into := into.(type) {
	case *metav1.WatchEvent:
		if err := decodeWatchEvent(data, into, c.shard); err != nil {
			return nil, nil, err
		}
		return into, nil, nil
	case *List:
		if isStatus(data) {
			return decodeStatusInPlaceOfList(data)
		}
		if err := parseList(data, into, c.shard); err != nil {
			return nil, nil, err
		}
		return into, nil, nil
	case *metav1.Status:
		if err := json.Unmarshal(data, into); err != nil {
			return nil, nil, err
		}
		return into, nil, nil
	case *Object:
		o, err := parseObject(data, "", "", nil)
		if err != nil {
			return nil, nil, err
		}
		*into = *o
		return into, nil, nil
	case nil:
		handed, other := takeHanded(data) // taken in any case, used unless a Status
		if isStatus(data) {
			st := &metav1.Status{}
			if err := json.Unmarshal(data, st); err != nil {
				return nil, nil, err
			}
			return st, nil, nil
		}
		if other {
			return otherShard, nil, nil
		}
		if handed != nil {
			return handed, nil, nil
		}
		o, err := parseObject(data, "", "", c.shard)
		if err == errOtherShard {
			return otherShard, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		return o, nil, nil
	}
	return nil, nil, fmt.Errorf("dyninformer: cannot decode into %T", into)
}

// otherShard is the object of a watch event that a sharded codec did not
// read: another shard's (see rawCodec). It is never cached; the shard's
// watch filter drops its events.
var otherShard = &Object{}

// isStatus reports whether data is a metav1.Status (an error from the API
// server or a proxy's rendering of one), as apierrors.FromObject tells one:
// kind Status with apiVersion v1 or meta.k8s.io/v1, or none, in any key
// order. It stops at the first kind or apiVersion that rules a Status out, so
// an object costs a look at its first keys.
func isStatus(data []byte) bool {
	kind, apiVersion, ok := false, false, true
	gjson.Result{Type: gjson.JSON, Raw: str(data)}.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "kind":
			kind = true
			ok = v.Type == gjson.String && v.Str == "Status"
		case "apiVersion":
			apiVersion = true
			ok = v.Type == gjson.String && (v.Str == "" || v.Str == "v1" || v.Str == "meta.k8s.io/v1")
		}
		return ok && !(kind && apiVersion)
	})
	return ok && kind
}

// decodeStatusInPlaceOfList returns the Status a 2xx response carries instead
// of a list: as a Status of failure, which the REST client turns into its
// error (reason and code kept); a Status of success is no list either.
func decodeStatusInPlaceOfList(data []byte) (runtime.Object, *schema.GroupVersionKind, error) {
	st := &metav1.Status{}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, nil, fmt.Errorf("list: a Status: %w", err)
	}
	if st.Status == metav1.StatusSuccess {
		return nil, nil, fmt.Errorf("list: a Status (%s), not a list", st.Status)
	}
	return st, nil, nil
}

// parseList reads a list page: its metadata, and every item as an Object, in
// one pass over the items. Items of lists of built-in types have no kind or
// apiVersion; they get the list's (kind without "List").
//
// A body without kind or without items is not a list: a proxy's
// {"error":"upstream timeout"} with a 200 would otherwise read as a list of
// nothing, and a relist would delete every cached object. client-go's dynamic
// client refuses the first (no kind) but takes a body with a kind and no
// items (a Table, say) for an empty list; every list the API server sends
// has items, so here that is refused too.
//
// With a shard, the items of other shards are left out, never copied.
func parseList(body []byte, into *List, shard *Shard) error {
	p := &scanner{b: body}
	if !p.open('{') {
		return errors.New("list: not a JSON object")
	}
	kind, apiVersion, items := "", "", false
	for {
		key, ok := p.key()
		if !ok {
			break
		}
		switch key {
		case "kind", "apiVersion":
			s, e := p.value()
			var v string
			if json.Unmarshal(body[s:e], &v) != nil {
				return fmt.Errorf("list: bad %s", key)
			}
			if key == "kind" {
				kind = v
			} else {
				apiVersion = v
			}
		case "metadata":
			s, e := p.value()
			if err := json.Unmarshal(body[s:e], &into.ListMeta); err != nil {
				return fmt.Errorf("list metadata: %w", err)
			}
		case "items":
			items = true
			t := newTypeMembers(strings.TrimSuffix(kind, "List"), apiVersion)
			if err := p.items(func(item []byte) error {
				o, err := parseItem(item, t, shard, nil)
				switch err {
				case nil:
					into.Items = append(into.Items, o)
				case errOtherShard:
					into.others++
					err = nil
				}
				return err
			}); err != nil {
				return err
			}
		default:
			p.value()
		}
		if p.err != nil {
			return p.err
		}
	}
	if p.err != nil {
		return p.err
	}
	if kind == "" || !items {
		return fmt.Errorf("list: a body without kind or items is not a list: %s", excerpt(body))
	}
	if into.Items == nil {
		into.Items = []runtime.Object{}
	}
	return nil
}

// excerpt is the start of a body that is not what was asked for, for errors.
func excerpt(body []byte) string {
	const n = 200
	if len(body) > n {
		return strconv.Quote(string(body[:n])) + "..."
	}
	return strconv.Quote(string(body))
}

// scanner walks JSON text without decoding it; it trusts the API server to send
// valid JSON, and reports truncated input.
type scanner struct {
	b   []byte
	i   int
	err error
}

func (p *scanner) skipSpace() {
	for p.i < len(p.b) && (isSpace(p.b[p.i]) || p.b[p.i] == ',' || p.b[p.i] == ':') {
		p.i++
	}
}

func (p *scanner) open(c byte) bool {
	p.skipSpace()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// key reads the next member's key, a view of b unless it has escapes; false
// at the end of the object.
func (p *scanner) key() (string, bool) {
	p.skipSpace()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
		} else {
			p.err = errors.New("list: truncated or malformed JSON")
		}
		return "", false
	}
	s := p.i
	e := skipValue(p.b, p.i)
	if e < 0 {
		p.err = errors.New("list: truncated JSON")
		return "", false
	}
	p.i = e
	return stringValue(p.b[s:e], false), true
}

// value skips the next value and returns its span.
func (p *scanner) value() (int, int) {
	p.skipSpace()
	s := p.i
	e := skipValue(p.b, p.i)
	if e < 0 {
		p.err = errors.New("list: truncated JSON")
		return s, s
	}
	p.i = e
	return s, e
}

// items calls f with every element of the array that comes next.
func (p *scanner) items(f func([]byte) error) error {
	p.skipSpace()
	if p.i < len(p.b) && p.b[p.i] == 'n' { // null
		p.value()
		return p.err
	}
	if !p.open('[') {
		return errors.New("list: items is not an array")
	}
	for {
		p.skipSpace()
		if p.i >= len(p.b) {
			return errors.New("list: truncated JSON")
		}
		if p.b[p.i] == ']' {
			p.i++
			return nil
		}
		s, e := p.value()
		if p.err != nil {
			return p.err
		}
		if err := f(p.b[s:e]); err != nil {
			return err
		}
	}
}

// skipValue returns the end of the JSON value that starts at b[i], or -1 if
// it is cut short. Strings are skipped with IndexByte, which is what keeps the
// scan fast: most of an object's bytes are inside strings.
func skipValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			// Most strings have no escapes: the first quote or backslash,
			// eight bytes at a time, ends them.
			if j := stringStop(b, i+1); j < len(b) && b[j] == '"' {
				i = j + 1
				if depth == 0 {
					return i
				}
				continue
			}
			e := skipString(b, i+1)
			if e < 0 {
				return -1
			}
			i = e
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth <= 0 {
				return i + 1
			}
		case ',', ':', ' ', '\n', '\r', '\t':
		default:
			if depth == 0 { // a number, true, false or null
				for i < len(b) && !strings.ContainsRune(",}] \n\r\t", rune(b[i])) {
					i++
				}
				return i
			}
		}
		i++
	}
	return -1
}

// skipString returns the index after the closing quote of the string whose
// contents start at b[i], or -1 if it does not end in b.
func skipString(b []byte, i int) int {
	e, _ := stringEnd(b, i, false)
	return e
}

// shortString is how far quote looks byte by byte before it calls
// IndexByte: most strings of an object (keys, managedFields, metadata) are
// shorter, and for them the call costs more than the loop.
const shortString = 16

// quote returns the index of the first '"' in b from i, or len(b) and false.
func quote(b []byte, i int) (int, bool) {
	lim := min(len(b), i+shortString)
	for j := i; j < lim; j++ {
		if b[j] == '"' {
			return j, true
		}
	}
	if q := bytes.IndexByte(b[lim:], '"'); q >= 0 {
		return lim + q, true
	}
	return len(b), false
}

// stringEnd goes on with a string whose contents resume at b[i]; escaped says
// that an odd run of backslashes ends just before b[i]. It returns the index
// after the closing quote, or -1 and whether the end of b is escaped when the
// string does not end in b. Each byte is looked at no more than twice, so a
// string read in pieces costs its length, however long its runs of
// backslashes.
func stringEnd(b []byte, i int, escaped bool) (int, bool) {
	for {
		stop, found := quote(b, i)
		// The quote ends the string unless an odd number of backslashes
		// precedes it; a run that goes back to i continues the one before.
		n := 0
		for j := stop - 1; j >= i && b[j] == '\\'; j-- {
			n++
		}
		if n < stop-i {
			escaped = false
		}
		escaped = escaped != (n%2 == 1)
		if !found {
			return -1, escaped
		}
		if !escaped {
			return stop + 1, false
		}
		escaped = false
		i = stop + 1
	}
}

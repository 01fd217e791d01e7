package dyninformer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// decodedEvent is what client-go's watch decoder hands the reflector.
type decodedEvent struct {
	typ watch.EventType
	obj runtime.Object
}

// decodeAll reads stream through client-go's watch decoders with the framer
// given, its reads at most chunk bytes.
func decodeAll(t *testing.T, framer jsonFramer, stream []byte, chunk int) ([]decodedEvent, error) {
	t.Helper()
	fr := framer.NewFrameReader(&oneByte{data: stream, n: chunk})
	dec := restclientwatch.NewDecoder(streaming.NewDecoder(fr, rawCodec{}), rawCodec{})
	var out []decodedEvent
	for {
		typ, obj, err := dec.Decode()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return out, err
		}
		out = append(out, decodedEvent{typ, obj})
	}
}

func sameEvents(a, b []decodedEvent) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d events, want %d", len(a), len(b))
	}
	for i := range a {
		if a[i].typ != b[i].typ {
			return fmt.Errorf("event %d: type %s, want %s", i, a[i].typ, b[i].typ)
		}
		switch w := b[i].obj.(type) {
		case *Object:
			g, ok := a[i].obj.(*Object)
			if !ok || !bytes.Equal(g.raw, w.raw) || g.name != w.name || g.namespace != w.namespace || g.uid != w.uid || g.resourceVersion != w.resourceVersion {
				return fmt.Errorf("event %d: %#v, want %#v", i, a[i].obj, w)
			}
		case *metav1.Status:
			g, ok := a[i].obj.(*metav1.Status)
			if !ok || g.Code != w.Code || g.Reason != w.Reason {
				return fmt.Errorf("event %d: %#v, want the Status %#v", i, a[i].obj, w)
			}
		default:
			return fmt.Errorf("event %d: unexpected %T", i, w)
		}
	}
	return nil
}

// TestFramerSpansReadAsTheScanWould: with the framer's spans, every event
// decodes to exactly what it decodes to without them (bytes, metadata, the
// ERROR event's Status), whatever size the reads come in, and the objects
// were built from the spans (the object decode took them, nothing is left).
func TestFramerSpansReadAsTheScanWould(t *testing.T) {
	stream, _ := watchStream()
	var big strings.Builder
	for i := range 50 {
		fmt.Fprintf(&big, `{"type":"ADDED","object":{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"d%d","namespace":"n","uid":"u%d","resourceVersion":"%d","labels":{"a":"]"},"annotations":{"x":"{\"y\":[1]}"},"ownerReferences":[{"uid":"o"}],"finalizers":["f"],"managedFields":[{"manager":"m","fieldsV1":{"f:spec":{"f:replicas":{}}}}]},"spec":{"replicas":%d}}}`+"\n", i, i, i+10, i)
	}
	stream = append(stream, big.String()...)
	want, err := decodeAll(t, jsonFramer{}, stream, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []int{1, 7, 1460, 1 << 20} {
		got, err := decodeAll(t, jsonFramer{hints: true}, stream, chunk)
		if err != nil {
			t.Fatalf("reads of %d: %v", chunk, err)
		}
		if err := sameEvents(got, want); err != nil {
			t.Fatalf("reads of %d: %v", chunk, err)
		}
	}
	handed.Lock()
	left := len(handed.m)
	handed.Unlock()
	if left != 0 {
		t.Errorf("%d objects built from spans were never taken", left)
	}
}

// TestFramerSpansUsed: a vouched frame comes with its trailer, which names
// the metadata and each container in it; the event decode builds the Object
// from them and the object decode takes it.
func TestFramerSpansUsed(t *testing.T) {
	obj := `{"kind":"A","metadata":{"name":"a","labels":{"k":"v"},"managedFields":[{"f":{}}]},"spec":{}}`
	frame := `{"type":"ADDED","object":` + obj + `}`
	fr := jsonFramer{hints: true}.NewFrameReader(io.NopCloser(strings.NewReader(frame + "\n")))
	got, err := readMarkedFrame(fr, 4096)
	if err != nil {
		t.Fatal(err)
	}
	js, trailer, ok := cutTrailer(got)
	if !ok || string(js) != frame {
		t.Fatalf("frame %q: want %q and a trailer", got, frame)
	}
	if n := len(trailer) / 8; n != 3 {
		t.Fatalf("%d spans, want the metadata, labels and managedFields", n)
	}
	var into metav1.WatchEvent
	if err := decodeWatchEvent(got, &into, nil); err != nil {
		t.Fatal(err)
	}
	g, _ := takeHanded(into.Object.Raw)
	if g == nil {
		t.Fatal("the event decode built no Object from the spans")
	}
	if g.name != "a" || string(g.raw) != `{"kind":"A","metadata":{"name":"a","labels":{"k":"v"}},"spec":{}}` {
		t.Errorf("object %s (%s)", g.raw, g.name)
	}
	if o, _ := takeHanded(into.Object.Raw); o != nil {
		t.Error("an Object was taken twice")
	}
	// A span that does not match the bytes is not used: the object is read
	// by scanning, and comes out the same.
	bad := append([]byte(nil), got...)
	bad[len(js)+8] ^= 1 // the labels' start
	into = metav1.WatchEvent{}
	if err := decodeWatchEvent(bad, &into, nil); err != nil {
		t.Fatal(err)
	}
	if o, _ := takeHanded(into.Object.Raw); o != nil {
		t.Error("an Object was built from spans that do not match")
	}
}

// FuzzFramerSpans: any stream decodes with the framer's spans exactly as it
// does without them (the same events, or an error in both).
func FuzzFramerSpans(f *testing.F) {
	stream, _ := watchStream()
	f.Add(stream, uint8(5))
	f.Add([]byte(`{"type":"ADDED","object":{"metadata":{"a":[],"b":{},"name":"x","c":[{}]}}}`), uint8(3))
	f.Add([]byte(`{"type":"ADDED","object":{"kind":"K","spec":{"a":[1]},"metadata":{"name":"x","l":{"a":"}"}}}}`), uint8(64))
	f.Add([]byte(`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"code":410}}`), uint8(1))
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8) {
		want, werr := decodeAll(t, jsonFramer{}, stream, int(chunk)%64+1)
		got, gerr := decodeAll(t, jsonFramer{hints: true}, stream, int(chunk)%64+1)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("error %v with spans, %v without", gerr, werr)
		}
		if err := sameEvents(got, want); err != nil {
			t.Fatal(err)
		}
	})
}

// TestFramerSpansAllocateNoMore: the spans spare the codec a second scan of
// the metadata's containers; they must not cost an allocation per event
// instead (what the collector has to do is the other half of the CPU an
// event costs).
func TestFramerSpansAllocateNoMore(t *testing.T) {
	const n = 50
	stream := benchStream(n)
	allocs := func(framer jsonFramer) float64 {
		return testing.AllocsPerRun(20, func() {
			fr := framer.NewFrameReader(io.NopCloser(bytes.NewReader(stream)))
			dec := restclientwatch.NewDecoder(streaming.NewDecoder(fr, rawCodec{}), rawCodec{})
			for range n {
				if _, _, err := dec.Decode(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	with, without := allocs(jsonFramer{hints: true}), allocs(jsonFramer{})
	if with > without {
		t.Errorf("%.0f allocations for %d events with the spans, %.0f without", with, n, without)
	}
}

// TestFramerSpansEdgeCases: objects whose metadata the spans describe
// oddly (eight containers and nine, a first container that is not the
// metadata, escaped keys, a second metadata, bytes that are not UTF-8,
// brackets that do not pair, two objects in one event, Status shapes,
// frames around the streaming decoder's first buffer and its trailer)
// decode as they do without the spans, whatever the reads' size, and leave
// nothing behind.
func TestFramerSpansEdgeCases(t *testing.T) {
	mf := `"managedFields":[{"manager":"m","fieldsV1":{"f:spec":{"f:replicas":{}}}}]`
	cases := []string{
		`{"type":"ADDED","object":{"kind":"K","apiVersion":"v1","metadata":{"name":"a","a":{},"b":[],"c":{},"d":[],"e":{},"f":[],"g":{},` + mf + `}}}`,
		`{"type":"ADDED","object":{"kind":"K","apiVersion":"v1","metadata":{"name":"a","a":{},"b":[],"c":{},"d":[],"e":{},"f":[],"g":{},"h":{},` + mf + `}}}`,
		`{"type":"ADDED","object":{"kind":"K","spec":{"x":{"name":"no"}},"metadata":{"name":"a",` + mf + `}}}`,
		`{"type":"ADDED","object":{"kind":"K","metadata":{"name":"a","managed\u0046ields":[{"x":1}]}}}`,
		`{"type":"ADDED","object":{"kind":"K","meta\u0064ata":{"name":"a","managedFields":[{"x":1}]}}}`,
		`{"type":"ADDED","object":{"kind":"K","metadata":{"name":"a","labels":{"x":"y"}},"metadata":{"name":"b"}}}`,
		"{\"type\":\"ADDED\",\"object\":{\"kind\":\"K\",\"metadata\":{\"name\":\"a\",\"labels\":{\"x\":\"\xff\xfe\"},\"n\xffame\":\"q\"}}}\xff",
		`{"type":"ADDED","object":{"kind":"K","metadata":{"labels":{"x":"y"},"name":"a","labels":{"z":1}}}}`,
		`{"type":"ADDED","object":{"kind":"K","metadata":{"name":{"a":1},"namespace":["x"],"uid":"u"}}}`,
		`{"type":"ADDED","object":{"kind":"K","metadata":{"name":"a","labels":1{"x":{}}}}}`,
		`{"type":"ADDED","object":{"kind":"K","metadata":{"name":"a","labels":{"x":"}"}]}}}`,
		`{"type":"ADDED","object":{"kind":"K","metadata":{"name":"a"}}{"metadata":{"name":"b"}}}`,
		`{"type":"ADDED","object":{"kind":"K","metadata":[{"name":"a"}]}}`,
		`{"type":"BOOKMARK","object":{"kind":"K","apiVersion":"v1","metadata":{"resourceVersion":"7","annotations":{"k8s.io/initial-events-end":"true"}}}}`,
		`{"type":"ERROR","object":{"metadata":{"annotations":{}},"kind":"Status","apiVersion":"v1","code":410}}`,
		`{"type":"ERROR","object":{"metadata":{},"kind":"Status","code":500,"details":{"causes":[{}]}}}`,
		`{"type":"ADDED","object":{"metadata":{"name":"s"},"kind":"Status","apiVersion":"v1","code":200}}`,
		`{"type":"ADDED","object":{"kind":"K","metadata":{"name":"a","labels":{"x":"y"} }   }  }`,
		`{"type":"MODIFIED","object":{"kind":"K","metadata":{"name":"a","x":"` + strings.Repeat(`\\`, 3000) + `","labels":{"k":"` + strings.Repeat("v", 5000) + `"},` + mf + `}}}`,
	}
	// Sizes around the streaming decoder's first buffer (1024) and the
	// trailer's length.
	for pad := 940; pad < 1060; pad++ {
		cases = append(cases, `{"type":"ADDED","object":{"kind":"K","metadata":{"name":"p","labels":{"k":"`+strings.Repeat("v", pad)+`"},`+mf+`}}}`)
	}
	var all strings.Builder
	for _, c := range cases {
		all.WriteString(c + "\n")
	}
	streams := append(cases, all.String())
	for i, s := range streams {
		for _, chunk := range []int{1, 3, 17, 1000, 1 << 20} {
			want, werr := decodeAll(t, jsonFramer{}, []byte(s), chunk)
			got, gerr := decodeAll(t, jsonFramer{hints: true}, []byte(s), chunk)
			if (werr == nil) != (gerr == nil) || fmt.Sprint(werr) != fmt.Sprint(gerr) {
				t.Errorf("case %d chunk %d: err %v, want %v", i, chunk, gerr, werr)
			}
			if err := sameEvents(got, want); err != nil {
				t.Errorf("case %d chunk %d: %v", i, chunk, err)
			}
		}
	}
	handed.Lock()
	n := len(handed.m)
	handed.Unlock()
	if n != 0 {
		t.Errorf("%d left", n)
	}
}

// TestFramerSpansConcurrentWatches: watches decoding at once (-race) each
// get their own objects from the hand-off, and none is left in it.
func TestFramerSpansConcurrentWatches(t *testing.T) {
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b strings.Builder
			for i := range 300 {
				fmt.Fprintf(&b, `{"type":"ADDED","object":{"kind":"K","metadata":{"name":"w%d-%d","labels":{"a":"b"},"managedFields":[{}]}}}`+"\n", w, i)
			}
			got, err := decodeAll(t, jsonFramer{hints: true}, []byte(b.String()), 1+w*37)
			if err != nil {
				t.Error(err)
				return
			}
			for i, e := range got {
				if o := e.obj.(*Object); o.name != fmt.Sprintf("w%d-%d", w, i) {
					t.Errorf("w%d event %d: %s", w, i, o.name)
				}
			}
		}()
	}
	wg.Wait()
	handed.Lock()
	n := len(handed.m)
	handed.Unlock()
	if n != 0 {
		t.Errorf("%d left", n)
	}
}

// TestHandOffNotTakenByAnotherEvent: an event decode whose object decode
// does not follow (a filter between the two, a caller that reads the type
// only; client-go's watch decoder always follows, nothing else need) must
// not hand its Object to the object decode of a later event whose bytes
// come at the same address with the same length (the next frame in the
// same buffer, one without spans).
func TestHandOffNotTakenByAnotherEvent(t *testing.T) {
	frame := func(name string, hints bool) []byte {
		src := `{"type":"MODIFIED","object":{"kind":"K","metadata":{"name":"` + name + `","labels":{"k":"v"},"managedFields":[{}]}}}` + "\n"
		fr := jsonFramer{hints: hints}.NewFrameReader(io.NopCloser(strings.NewReader(src)))
		b, err := readMarkedFrame(fr, 4096)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	buf := make([]byte, 4096) // the watch decoder's buffer
	a := frame("a", true)
	var first metav1.WatchEvent
	if _, _, err := (rawCodec{}).Decode(buf[:copy(buf, a)], nil, &first); err != nil {
		t.Fatal(err)
	}
	b := frame("b", false)
	var next metav1.WatchEvent
	if _, _, err := (rawCodec{}).Decode(buf[:copy(buf, b)], nil, &next); err != nil {
		t.Fatal(err)
	}
	obj, err := runtime.Decode(rawCodec{}, next.Object.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if o := obj.(*Object); o.name != "b" || !bytes.Contains(o.raw, []byte(`"b"`)) {
		t.Errorf("the object decode of b's event got %s", o.raw)
	}
	handed.Lock()
	defer handed.Unlock()
	if len(handed.m) != 0 {
		t.Errorf("%d objects left in the hand-off", len(handed.m))
	}
}

// TestStringStop: the first quote or backslash from i, at every offset and
// length, as a byte loop finds it.
func TestStringStop(t *testing.T) {
	t.Parallel()
	base := []byte(`abcdefgh"ijk\lmnopqrstuvwxyz0123456789"\"`)
	for n := 0; n <= len(base); n++ {
		b := base[:n]
		for i := 0; i <= n; i++ {
			want := n
			for j := i; j < n; j++ {
				if b[j] == '"' || b[j] == '\\' {
					want = j
					break
				}
			}
			if got := stringStop(b, i); got != want {
				t.Fatalf("stringStop(%q, %d) = %d, want %d", b, i, got, want)
			}
		}
	}
	// Bytes next to the ones looked for, and high bytes, flag nothing.
	b := []byte{'"' - 1, '"' + 1, '\\' - 1, '\\' + 1, 0xa2, 0xdc, 0, 0xff, 'a', '\\'}
	if got := stringStop(b, 0); got != 9 {
		t.Errorf("stringStop(%v) = %d, want 9", b, got)
	}
}

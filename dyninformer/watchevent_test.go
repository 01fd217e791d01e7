package dyninformer

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// TestFramerVouchesOnlyForEventsAsServed: a frame {"type":T,"object":{…}}
// with nothing after the object comes as it is, and the codec takes the
// object's end from the frame's; any other frame comes with a space before
// it, and the codec scans it.
func TestFramerVouchesOnlyForEventsAsServed(t *testing.T) {
	stream, _ := watchStream()
	fr := jsonFramer{}.NewFrameReader(io.NopCloser(bytes.NewReader(stream)))
	for {
		frame, err := readMarkedFrame(fr, 64)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if frame[0] != '{' {
			t.Errorf("an event as served is marked: %s", frame)
		}
	}
	for _, s := range []string{
		`{"type":"ADDED","object":{"metadata":{"name":"a"}},"extra":{"b":1}}`,
		`{"type":"ADDED","object":{"metadata":{"name":"a"}} , "x" : [1]}`,
		`{"object":{"metadata":{"name":"a"}},"type":"ADDED"}`,
		`{"type":"ADDED","object":{"metadata":{"name":"a"}}  7}`,
		`[{"type":"ADDED"},{"object":{}}]`,
	} {
		fr := jsonFramer{}.NewFrameReader(io.NopCloser(strings.NewReader(s)))
		frame, err := readMarkedFrame(fr, 8)
		if err != nil {
			t.Fatal(err)
		}
		if want := " " + s; string(frame) != want {
			t.Errorf("frame %q, want %q", frame, want)
		}
	}
}

// TestWatchEventObjectSpan: through client-go's decoders, each event's object
// is exactly its object's bytes, whether the framer vouched for the frame or
// not.
func TestWatchEventObjectSpan(t *testing.T) {
	const obj = `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"n","resourceVersion":"3"},"data":{"k":"}\"}"}}`
	frames := []string{
		`{"type":"ADDED","object":` + obj + `}`,
		`{"type":"MODIFIED","object":` + obj + "  \n }",
		`{"type":"MODIFIED","object":` + obj + `,"extra":{"b":"}"}}`,
		`{"object":` + obj + `,"type":"DELETED"}`,
	}
	types := []watch.EventType{watch.Added, watch.Modified, watch.Modified, watch.Deleted}
	fr := jsonFramer{}.NewFrameReader(io.NopCloser(strings.NewReader(strings.Join(frames, "\n"))))
	dec := restclientwatch.NewDecoder(streaming.NewDecoder(fr, rawCodec{}), rawCodec{})
	for i := range frames {
		typ, got, err := dec.Decode()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		o, ok := got.(*Object)
		if !ok || typ != types[i] || string(o.JSON()) != obj || o.GetName() != "a" {
			t.Errorf("event %d: %s %T %s, want %s %s", i, typ, got, o.JSON(), types[i], obj)
		}
	}
}

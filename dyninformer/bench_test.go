package dyninformer

import (
	"bytes"
	stdgzip "compress/gzip"
	"fmt"
	kgzip "github.com/klauspost/compress/gzip"
	"io"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	serializerjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	restclientwatch "k8s.io/client-go/rest/watch"

	"github.com/dynwatch/dynwatch/event"
)

// BenchmarkDecodeListPage decodes a page of 500 Deployments as dynwatch's
// informers do, against what the dynamic client does (unstructured maps):
//
//	go test ./dyninformer -run '^$' -bench DecodeListPage -benchmem -count 6 | benchstat -col /impl -
func BenchmarkDecodeListPage(b *testing.B) {
	page := benchPage(500)
	b.Run("impl=dynwatch", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		cpu0 := threadCPU()
		for b.Loop() {
			var l List
			if err := parseList(page, &l, nil); err != nil || len(l.Items) != 500 {
				b.Fatal(err, len(l.Items))
			}
		}
		b.ReportMetric(float64(threadCPU()-cpu0)/float64(b.N*500), "cpu-ns/object")
	})
	b.Run("impl=unstructured", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for b.Loop() {
			var l unstructured.UnstructuredList
			if _, _, err := unstructured.UnstructuredJSONScheme.Decode(page, nil, &l); err != nil || len(l.Items) != 500 {
				b.Fatal(err, len(l.Items))
			}
			for i := range l.Items {
				l.Items[i].SetManagedFields(nil) // what dynwatch's transform did
			}
		}
	})
}

// benchStream is a watch stream of n events, one per line as the API server
// writes them.
func benchStream(n int) []byte {
	var s bytes.Buffer
	for i := range n {
		fmt.Fprintf(&s, `{"type":"MODIFIED","object":%s}`+"\n", benchDeployment(i, true))
	}
	return s.Bytes()
}

// BenchmarkDecodeWatchEvent reads watch events through client-go's streaming
// and watch decoders: with dynwatch's framer and codec, against client-go's
// JSON framer and the dynamic client's unstructured decoding.
//
//	go test ./dyninformer -run '^$' -bench DecodeWatchEvent -benchmem -count 6 | benchstat -col /impl -
func BenchmarkDecodeWatchEvent(b *testing.B) {
	const n = 200
	stream := benchStream(n)
	// One op reads the whole stream of n events.
	decode := func(b *testing.B, framer runtime.Framer, frames, objects runtime.Decoder) {
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		cpu0 := threadCPU()
		for b.Loop() {
			fr := framer.NewFrameReader(io.NopCloser(bytes.NewReader(stream)))
			dec := restclientwatch.NewDecoder(streaming.NewDecoder(fr, frames), objects)
			for range n {
				if _, _, err := dec.Decode(); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		b.ReportMetric(float64(threadCPU()-cpu0)/float64(b.N*n), "cpu-ns/event")
	}
	b.Run("impl=dynwatch", func(b *testing.B) {
		decode(b, jsonFramer{hints: true}, rawCodec{}, rawCodec{})
	})
	b.Run("impl=dynwatch-nohints", func(b *testing.B) {
		decode(b, jsonFramer{}, rawCodec{}, rawCodec{})
	})
	b.Run("impl=unstructured", func(b *testing.B) {
		// As the dynamic client reads watch frames: a JSON serializer of a
		// scheme that knows metav1.WatchEvent, and unstructured objects.
		scheme := runtime.NewScheme()
		metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
		frames := serializerjson.NewSerializerWithOptions(serializerjson.DefaultMetaFactory, scheme, scheme, serializerjson.SerializerOptions{})
		decode(b, serializerjson.Framer, frames, unstructured.UnstructuredJSONScheme)
	})
}

// BenchmarkHandOver turns an informer's update into an Event, as every add,
// update and delete is:
//
//	go test ./dyninformer -run '^$' -bench HandOver -benchmem -count 6
func BenchmarkHandOver(b *testing.B) {
	m := &Manager{now: time.Now}
	e := &entry{watch: Watch{}}
	old, err := parseObject([]byte(benchDeployment(1, true)), "", "", nil)
	if err != nil {
		b.Fatal(err)
	}
	cur := *old
	cur.resourceVersion = "changed"
	b.ReportAllocs()
	for b.Loop() {
		if ev := m.event(e, event.Update, &cur, old); ev == nil || ev.Name != old.name {
			b.Fatal(ev)
		}
	}
}

// threadCPU is the CPU time the process has used, in ns: a benchmark's
// figure on a machine that others share, where wall time is not.
func threadCPU() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkInflateWatchStream inflates a gzip watch stream, flushed after
// each event as the API server flushes it: net/http's inflater (the
// standard library's) against gunzipTransport's.
func BenchmarkInflateWatchStream(b *testing.B) {
	const n = 200
	stream := benchStream(n)
	var z bytes.Buffer
	zw := stdgzip.NewWriter(&z)
	for _, line := range bytes.SplitAfter(stream, []byte("\n")) {
		_, _ = zw.Write(line)
		_ = zw.Flush()
	}
	_ = zw.Close()
	run := func(b *testing.B, open func(io.Reader) (io.Reader, error)) {
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		cpu0 := threadCPU()
		for b.Loop() {
			r, err := open(bytes.NewReader(z.Bytes()))
			if err != nil {
				b.Fatal(err)
			}
			if m, err := io.Copy(io.Discard, r); err != nil || m != int64(len(stream)) {
				b.Fatal(m, err)
			}
		}
		b.ReportMetric(float64(threadCPU()-cpu0)/float64(b.N*n), "cpu-ns/event")
	}
	b.Run("impl=stdlib", func(b *testing.B) {
		run(b, func(r io.Reader) (io.Reader, error) { return stdgzip.NewReader(r) })
	})
	b.Run("impl=klauspost", func(b *testing.B) {
		run(b, func(r io.Reader) (io.Reader, error) { return kgzip.NewReader(r) })
	})
}

package dyninformer

import (
	"bytes"
	"io"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// BenchmarkDecodeListPage_shard decodes a page of 500 Deployments as shard 0
// of 2 filtering on the client does (the codec of the shard, then keep):
//
//	go test ./dyninformer -run '^$' -bench DecodeListPage_shard -benchmem -count 6
func BenchmarkDecodeListPage_shard(b *testing.B) {
	page := benchPage(500)
	c := (&Client{}).WithShard(NewShard(2, 0, false), nil)
	b.Run("impl=shard", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for b.Loop() {
			var l List
			if err := parseList(page, &l, &c.shard); err != nil {
				b.Fatal(err)
			}
			l.Items = c.keep(l.Items)
			if len(l.Items) == 0 || len(l.Items) == 500 {
				b.Fatal(len(l.Items))
			}
		}
	})
}

// BenchmarkDecodeWatchEvent_shard reads 200 watch events through client-go's
// streaming and watch decoders as shard 0 of 2 filtering on the client does
// (the codec of the shard, then the watch filter's test, without its
// goroutine):
//
//	go test ./dyninformer -run '^$' -bench DecodeWatchEvent_shard -benchmem -count 6
func BenchmarkDecodeWatchEvent_shard(b *testing.B) {
	const n = 200
	stream := benchStream(n)
	c := (&Client{}).WithShard(NewShard(2, 0, false), nil)
	codec := rawCodec{shard: &c.shard}
	b.Run("impl=shard", func(b *testing.B) {
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		for b.Loop() {
			fr := jsonFramer{}.NewFrameReader(io.NopCloser(bytes.NewReader(stream)))
			dec := restclientwatch.NewDecoder(streaming.NewDecoder(fr, codec), codec)
			kept := 0
			for range n {
				typ, obj, err := dec.Decode()
				if err != nil {
					b.Fatal(err)
				}
				if o, ok := obj.(*Object); ok && (typ == watch.Bookmark || o != otherShard && c.shard.Owns(o.uid, o.namespace)) {
					kept++
				}
			}
			if kept == 0 || kept == n {
				b.Fatal(kept)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
	})
}

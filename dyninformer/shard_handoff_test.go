package dyninformer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// Watches decoding at once through the hand-off, sharded codecs of
// different shards and unsharded ones, with frames cut at odd sizes: each
// gets its own objects, another shard's as otherShard, and nothing is left
// in the hand-off.
func TestShardHandOffConcurrentCodecs(t *testing.T) {
	var wg sync.WaitGroup
	for w := range 12 {
		wg.Go(func() {
			var codec rawCodec
			var shard Shard
			if w%3 != 0 {
				shard = NewShard(3, w%3, w%2 == 0)
				codec.shard = &shard
			}
			var b bytes.Buffer
			var want []bool // another shard's
			for i := range 300 {
				uid, ns := fmt.Sprintf("%08x-0000-4000-8000-%012x", i*7919, w), fmt.Sprintf("ns-%d", i%13)
				fmt.Fprintf(&b, `{"type":"MODIFIED","object":{"kind":"K","apiVersion":"v1","metadata":{"name":"w%d-%d","namespace":%q,"uid":%q,"resourceVersion":"%d","labels":{"a":"b"},"managedFields":[{"m":"x"}]}}}`+"\n", w, i, ns, uid, i+1)
				want = append(want, codec.shard != nil && !shard.Owns(uid, ns))
			}
			fr := jsonFramer{hints: true}.NewFrameReader(&oneByte{data: b.Bytes(), n: 1 + w*53})
			dec := restclientwatch.NewDecoder(streaming.NewDecoder(fr, codec), codec)
			for i := 0; ; i++ {
				_, obj, err := dec.Decode()
				if errors.Is(err, io.EOF) {
					if i != len(want) {
						t.Errorf("w%d: %d events, want %d", w, i, len(want))
					}
					return
				}
				if err != nil {
					t.Errorf("w%d event %d: %v", w, i, err)
					return
				}
				o := obj.(*Object)
				if (o == otherShard) != want[i] {
					t.Errorf("w%d event %d: another shard's %v, want %v", w, i, o == otherShard, want[i])
				} else if o != otherShard && o.name != fmt.Sprintf("w%d-%d", w, i) {
					t.Errorf("w%d event %d: %s", w, i, o.name)
				}
			}
		})
	}
	wg.Wait()
	handed.Lock()
	defer handed.Unlock()
	if n := len(handed.m); n != 0 {
		t.Errorf("%d left in the hand-off", n)
	}
}

package dyninformer

import (
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// Owns decides as the sharding package's selector (the server's code) does,
// by uid and by namespace, the cluster-scoped "" included, for every count.
func TestShardOwnsAsTheSelector(t *testing.T) {
	for _, v := range []string{"", "a", "6f1c0a52-00000001-4b7e-9d7a-3f2c1b0e9a87"} {
		if got, want := fmt.Sprintf("%016x", fnv1a(v)), sharding.HashField(v); got != want {
			t.Errorf("fnv1a(%q) = %s, sharding.HashField %s", v, got, want)
		}
	}
	for _, count := range []int{2, 3, 4, 7, 16} {
		for index := range count {
			for _, byNS := range []bool{false, true} {
				s := NewShard(count, index, byNS)
				for n := range 2000 {
					uid, ns := fmt.Sprintf("%08x-0000-4000-8000-%012x", n*104729, n), fmt.Sprintf("ns-%d", n%97)
					if n%50 == 0 {
						ns = ""
					}
					want, err := s.sel.Matches(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Namespace: ns}})
					if err != nil {
						t.Fatal(err)
					}
					if got := s.Owns(uid, ns); got != want {
						t.Fatalf("shard %s: Owns(%s, %q) = %v, the selector says %v", s, uid, ns, got, want)
					}
				}
			}
		}
	}
	s := NewShard(3, 1, false)
	if n := testing.AllocsPerRun(100, func() { s.Owns("6f1c0a52-00000001-4b7e-9d7a-3f2c1b0e9a87", "ns") }); n != 0 {
		t.Errorf("Owns allocates %v times", n)
	}
}

// shardItems are n ConfigMaps as a list page's items, and which of them
// shard owns.
func shardItems(shard Shard, n int) ([]string, []bool) {
	items, owned := make([]string, n), make([]bool, n)
	for i := range items {
		uid := fmt.Sprintf("%08x-0000-4000-8000-000000000000", i*7919)
		items[i] = fmt.Sprintf(`{"metadata":{"name":"cm-%d","namespace":"ns","uid":%q,"resourceVersion":"%d","managedFields":[{"manager":"m"}]},"data":{"k":"v"}}`, i, uid, 10+i)
		owned[i] = shard.Owns(uid, "ns")
	}
	return items, owned
}

func listPage(items []string) []byte {
	return []byte(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"99"},"items":[` + strings.Join(items, ",") + `]}`)
}

// A shard's codec leaves other shards' items out of a list page, and does not
// assemble them: a page of only other shards' items costs what an empty page
// does, an item of another shard nothing at all.
func TestShardCodecList(t *testing.T) {
	shard := NewShard(2, 1, false)
	items, owned := shardItems(shard, 40)
	// An item without a uid is not the codec's to judge: the client's keep is.
	items = append(items, `{"metadata":{"name":"no-uid","namespace":"ns"}}`)
	var l List
	if err := parseList(listPage(items), &l, &shard); err != nil {
		t.Fatal(err)
	}
	want := 1
	for i, own := range owned {
		if own {
			want++
		}
		found := false
		for _, it := range l.Items {
			found = found || it.(*Object).name == "cm-"+strconv.Itoa(i)
		}
		if found != own {
			t.Errorf("cm-%d: in the list %v, the shard's %v", i, found, own)
		}
	}
	if len(l.Items) != want || l.ResourceVersion != "99" {
		t.Errorf("%d items at %q, want %d at 99", len(l.Items), l.ResourceVersion, want)
	}
	if o := l.Items[len(l.Items)-1].(*Object); o.name != "no-uid" || string(o.raw) != `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"no-uid","namespace":"ns"}}` {
		t.Errorf("last item %s %s", o.name, o.raw)
	}

	var others []string
	for i, own := range owned {
		if !own {
			others = append(others, items[i])
		}
	}
	page, empty := listPage(others), listPage(nil)
	foreign := testing.AllocsPerRun(50, func() { _ = parseList(page, &List{}, &shard) })
	none := testing.AllocsPerRun(50, func() { _ = parseList(empty, &List{}, &shard) })
	if foreign > none {
		t.Errorf("a page of %d items of other shards: %v allocations, an empty page %v", len(others), foreign, none)
	}
	item := []byte(others[0])
	tm := newTypeMembers("ConfigMap", "v1")
	if n := testing.AllocsPerRun(50, func() { _, _ = parseItem(item, tm, &shard, nil) }); n != 0 {
		t.Errorf("an item of another shard: %v allocations", n)
	}
	// The shard's own: the Object, its bytes, and the four strings it keeps
	// in one.
	var own []byte
	for i := range owned {
		if owned[i] {
			own = []byte(items[i])
			break
		}
	}
	if n := testing.AllocsPerRun(50, func() { _, _ = parseItem(own, tm, &shard, nil) }); n != 3 {
		t.Errorf("an item of the shard: %v allocations, want 3", n)
	}
}

// Through client-go's watch decoders and the shard's watch filter, the events
// of other shards' objects (their deletes too) are dropped, their objects
// never assembled; the shard's own, bookmarks and errors pass, by uid and by
// namespace (where a bookmark's namespace "" may be another shard's).
func TestShardCodecWatch(t *testing.T) {
	for _, byNS := range []bool{false, true} {
		shard := NewShard(2, 0, byNS)
		var mine, theirs string
		for n := 0; mine == "" || theirs == ""; n++ {
			uid, ns := fmt.Sprintf("%08x-0000-4000-8000-000000000000", n*7919), fmt.Sprintf("ns-%d", n)
			obj := fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-%d","namespace":%q,"uid":%q,"resourceVersion":"%d"}}`, n, ns, uid, 10+n)
			if shard.Owns(uid, ns) && mine == "" {
				mine = obj
			} else if !shard.Owns(uid, ns) && theirs == "" {
				theirs = obj
			}
		}
		frames := []string{
			`{"type":"ADDED","object":` + theirs + `}`,
			`{"type":"ADDED","object":` + mine + `}`,
			`{"type":"MODIFIED","object":` + theirs + `}`,
			`{"object":` + theirs + `,"type":"DELETED"}`, // not vouched by the framer
			`{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"20","annotations":{"k8s.io/initial-events-end":"true"}}}}`,
			`{"type":"DELETED","object":` + mine + `}`,
			`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"Expired","code":410}}`,
		}
		codec := rawCodec{shard: &shard}
		// With the framer's spans (the event decode builds the Object) and
		// without (the object decode does).
		for _, framer := range []jsonFramer{{}, {hints: true}} {
			fr := framer.NewFrameReader(io.NopCloser(strings.NewReader(strings.Join(frames, "\n"))))
			dec := restclientwatch.NewDecoder(streaming.NewDecoder(fr, codec), codec)
			for i, f := range frames {
				_, obj, err := dec.Decode()
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if other := strings.Contains(f, theirs); other != (obj == otherShard) {
					t.Errorf("by namespace %v, spans %v: frame %d: %T %p, another shard's %v", byNS, framer.hints, i, obj, obj, other)
				}
			}
		}

		c := (&Client{}).WithShard(shard, slog.New(slog.DiscardHandler))
		fr := jsonFramer{hints: true}.NewFrameReader(io.NopCloser(strings.NewReader(strings.Join(frames, "\n"))))
		sw := watch.NewStreamWatcher(restclientwatch.NewDecoder(streaming.NewDecoder(fr, codec), codec), nil)
		w := c.filterWatch(t.Context(), sw, cmGVR, "ns", shard.Selector())
		var got []string
		for ev := range w.ResultChan() {
			got = append(got, string(ev.Type))
		}
		w.Stop()
		if want := "ADDED BOOKMARK DELETED ERROR"; strings.Join(got, " ") != want {
			t.Errorf("by namespace %v: events %v, want %s", byNS, got, want)
		}
		if filters, known := c.server.get("v1"); !known || filters {
			t.Errorf("by namespace %v: after another shard's object on a watch with the selector, server filters %v (known %v)", byNS, filters, known)
		}
	}
}

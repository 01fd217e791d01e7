package dyninformer

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// The server's own answer to each shard's selector (read by the unsharded
// client, so that no client filter hides what it sent) is exactly the
// objects Owns gives the shard, for counts that do not divide 2^64 too: the
// shards of a set split the objects between them, none twice, none lost.
func TestShardServerRangesAsOwns(t *testing.T) {
	gated, err := testenv.Start(testenv.Options{FeatureGates: []string{"ShardedListAndWatch"}})
	if err != nil {
		t.Fatal(err)
	}
	defer gated.Stop()
	ns, uids := shardObjects(t, gated.Config, 120)
	all, err := NewClient(gated.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, count := range []int{3, 5, 7} {
		seen := map[string]int{}
		for index := range count {
			s := NewShard(count, index, false)
			l, err := all.List(t.Context(), cmGVR, ns, metav1.ListOptions{ShardSelector: s.Selector()})
			if err != nil {
				t.Fatalf("shard %s: %v", s, err)
			}
			if l.ShardInfo == nil {
				t.Fatalf("shard %s: no shardInfo", s)
			}
			for _, it := range l.Items {
				o := it.(*Object)
				seen[o.uid]++
				if !s.Owns(o.uid, o.namespace) {
					t.Errorf("shard %s: the server sent %s, which Owns gives another shard", s, o.uid)
				}
			}
		}
		for _, uid := range uids {
			if seen[uid] != 1 {
				t.Errorf("count %d: %s sent to %d shards", count, uid, seen[uid])
			}
		}
	}
	// By namespace, a cluster-scoped resource: every Namespace is the
	// shard's that holds the hash of "", and the server says so too.
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	everything, err := all.List(t.Context(), nsGVR, "", metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for index := range 3 {
		s := NewShard(3, index, true)
		l, err := all.List(t.Context(), nsGVR, "", metav1.ListOptions{ShardSelector: s.Selector()})
		if err != nil {
			t.Fatalf("shard %s: %v", s, err)
		}
		want := 0
		if s.Owns("", "") {
			want = len(everything.Items)
		}
		if len(l.Items) != want {
			t.Errorf("shard %s: the server sent %d Namespaces, Owns gives it %d", s, len(l.Items), want)
		}
	}
}

// Owns hashes the bytes of any string as the sharding package's selector
// does: empty, not ASCII, invalid UTF-8, very long.
func TestShardOwnsUnusualValues(t *testing.T) {
	vals := []string{"", "é", "\xff\xfe", "\x00", strings.Repeat("ü-", 5000)}
	for _, count := range []int{2, 3, 7} {
		for index := range count {
			for _, byNS := range []bool{false, true} {
				s := NewShard(count, index, byNS)
				for _, v := range vals {
					want, err := s.sel.Matches(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: types.UID(v), Namespace: v}})
					if err != nil {
						t.Fatal(err)
					}
					if got := s.Owns(v, v); got != want {
						t.Errorf("shard %s: Owns(%q) = %v, the selector %v", s, v[:min(len(v), 8)], got, want)
					}
				}
			}
		}
	}
}

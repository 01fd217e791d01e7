package dyninformer

import (
	"fmt"
	"testing"
)

func TestShardBounds(t *testing.T) {
	for _, tc := range []struct {
		count, index int
		sel          string
	}{
		{2, 0, "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"},
		{2, 1, "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"},
		{4, 2, "shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')"},
		{3, 1, "shardRange(object.metadata.uid, '0x5555555555555555', '0xaaaaaaaaaaaaaaaa')"},
		{1, 0, ""},
	} {
		if got := NewShard(tc.count, tc.index, false).Selector(); got != tc.sel {
			t.Errorf("shard %d of %d: selector %q, want %q", tc.index, tc.count, got, tc.sel)
		}
	}
}

// Every object is in exactly one shard of a set, whatever the count.
func TestShardPartition(t *testing.T) {
	for _, count := range []int{2, 3, 4, 7} {
		for _, byNS := range []bool{false, true} {
			shards := make([]Shard, count)
			for i := range shards {
				shards[i] = NewShard(count, i, byNS)
			}
			per := make([]int, count)
			for n := range 3000 {
				uid, ns := fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n*7919), fmt.Sprintf("ns-%d", n%300)
				owners := 0
				for i, s := range shards {
					if s.Owns(uid, ns) {
						owners++
						per[i]++
					}
				}
				if owners != 1 {
					t.Fatalf("count %d byNamespace %v: %s/%s has %d owners", count, byNS, ns, uid, owners)
				}
			}
			// Namespaces of one pattern ("ns-0" … "ns-299") hash close
			// together with FNV-1a: by namespace, shares can be far from even.
			for i, n := range per {
				if !byNS && n < 3000/count/2 {
					t.Errorf("count %d byNamespace %v: shard %d has %d of 3000", count, byNS, i, n)
				}
			}
		}
	}
	if !NewShard(2, 0, true).Owns("x", "") && !NewShard(2, 1, true).Owns("x", "") {
		t.Error("a cluster-scoped object by namespace has no shard")
	}
}

// ShardOf names the one shard of the count that owns the object.
func TestShardOf(t *testing.T) {
	t.Parallel()
	for _, count := range []int{0, 1, 2, 3, 7} {
		for i := range 500 {
			uid, ns := fmt.Sprintf("uid-%d", i), fmt.Sprintf("ns-%d", i%13)
			for _, byNS := range []bool{false, true} {
				got := ShardOf(count, byNS, uid, ns)
				if count < 2 {
					if got != 0 {
						t.Fatalf("ShardOf(%d, …) = %d, want 0", count, got)
					}
					continue
				}
				if !NewShard(count, got, byNS).Owns(uid, ns) {
					t.Fatalf("ShardOf(%d, %v, %s, %s) = %d, which does not own it", count, byNS, uid, ns, got)
				}
			}
		}
	}
}

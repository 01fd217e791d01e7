package dyninformer

import (
	"fmt"
	"log/slog"
	"math/big"
	"math/bits"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/sharding"
)

// Shard is one of Count equal ranges of the 64-bit FNV-1a hash space of an
// object's uid (or namespace): the objects a shard keeps. Membership is
// decided by k8s.io/apimachinery/pkg/sharding, the code the API server's
// shardRange() filter runs, so the client and the server always agree.
type Shard struct {
	Count, Index int
	// ByNamespace: the hash is of the namespace, not the uid. Every
	// cluster-scoped object then has the namespace "" and so the one shard
	// that holds the hash of "" (as the server decides too).
	ByNamespace bool

	sel sharding.Selector
	// The range as numbers, for Owns: [lo, hi), or [lo, 2^64) when top.
	lo, hi uint64
	top    bool
}

// NewShard returns shard index of count; count 0 or 1 is everything.
func NewShard(count, index int, byNamespace bool) Shard {
	s := Shard{Count: count, Index: index, ByNamespace: byNamespace}
	if count > 1 {
		s.sel = sharding.NewSelector(s.Requirement())
		s.lo, _ = bits.Div64(uint64(index), 0, uint64(count))
		if s.top = index+1 >= count; !s.top {
			s.hi, _ = bits.Div64(uint64(index+1), 0, uint64(count))
		}
	}
	return s
}

// Requirement is the shard's range: [Index, Index+1) × 2^64/Count, its
// bounds 0x-prefixed 16-digit hex (the API server refuses shorter ones), the
// last shard's end 0x10000000000000000.
func (s Shard) Requirement() sharding.ShardRangeRequirement {
	key := "object.metadata.uid"
	if s.ByNamespace {
		key = "object.metadata.namespace"
	}
	return sharding.ShardRangeRequirement{Key: key, Start: bound(s.Index, s.Count), End: bound(s.Index+1, s.Count)}
}

// bound is i × 2^64 / n, rounded down, as 0x and 16 hex digits (17 for 2^64).
func bound(i, n int) string {
	b := new(big.Int).Lsh(big.NewInt(int64(i)), 64)
	b.Quo(b, big.NewInt(int64(n)))
	return fmt.Sprintf("0x%016x", b)
}

// Sharded reports whether the shard is a part, not everything.
func (s Shard) Sharded() bool { return s.sel != nil }

// Selector is the shardSelector a list or watch of the shard sends; "" for
// everything.
func (s Shard) Selector() string {
	if s.sel == nil {
		return ""
	}
	return s.sel.String()
}

// String names the shard for logs, /readyz and the state file: "1/3 by uid".
func (s Shard) String() string {
	by := "uid"
	if s.ByNamespace {
		by = "namespace"
	}
	return fmt.Sprintf("%d/%d by %s", s.Index, s.Count, by)
}

// Owns reports whether the object of uid in namespace ns is the shard's. It
// decides as the sharding package's selector does (the FNV-1a hash of
// sharding.HashField, in the shard's range, its bounds those of
// Requirement), without its allocations: the codec asks it of every object
// it reads (TestShardOwnsAsTheSelector holds the two to each other).
func (s Shard) Owns(uid, ns string) bool {
	if s.sel == nil {
		return true
	}
	v := uid
	if s.ByNamespace {
		v = ns
	}
	h := fnv1a(v)
	return h >= s.lo && (s.top || h < s.hi)
}

// ShardOf is the index of the shard, of count split by uid (or namespace),
// that owns the object of uid in namespace ns (0 when count is below 2).
func ShardOf(count int, byNamespace bool, uid, ns string) int {
	for i := range count {
		if NewShard(count, i, byNamespace).Owns(uid, ns) {
			return i
		}
	}
	return 0
}

// fnv1a is the 64-bit FNV-1a hash of v, as hash/fnv's New64a computes it.
func fnv1a(v string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(v); i++ {
		h ^= uint64(v[i])
		h *= prime
	}
	return h
}

// serverSharding remembers, per API group and version (each is served by one
// server: the API server or an aggregated one), whether the server filters
// by shardSelector, as its last list answered.
type serverSharding struct {
	log     *slog.Logger
	mu      sync.Mutex
	filters map[string]bool
	// refused: group/versions whose server answered a selector with a 400,
	// and when; their requests do not carry it for refuseFor, then ask
	// again (the server may have been restarted with the feature).
	refused map[string]time.Time
	// now is the clock of refusals (nil: time.Now).
	now func() time.Time
}

// refuseFor is how long a server's refusal of the selector holds.
const refuseFor = 10 * time.Minute

func (p *serverSharding) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

func (p *serverSharding) isRefused(gv string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.refused[gv]
	return ok && p.clock().Sub(at) < refuseFor
}

// refuse notes that gv's server refuses the selector; true when that is
// news (the first time, or again after a refusal that ran out).
func (p *serverSharding) refuse(gv string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock()
	at, ok := p.refused[gv]
	if ok && now.Sub(at) < refuseFor {
		return false
	}
	if p.refused == nil {
		p.refused = map[string]time.Time{}
	}
	p.refused[gv] = now
	return true
}

func (p *serverSharding) get(gv string) (filters, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	filters, known = p.filters[gv]
	return filters, known
}

func (p *serverSharding) set(gv string, filters bool) (changed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old, known := p.filters[gv]
	p.filters[gv] = filters
	return !known || old != filters
}

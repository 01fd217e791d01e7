// Package memory sets the Go runtime's memory default of a dynwatch
// process: a soft limit from the container's memory limit, unless the
// environment chooses one (GOMEMLIMIT).
package memory

import (
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// memoryLimitShare is the part of the container's memory limit that
// dynwatch gives the Go runtime as its soft limit: the rest is for what the
// runtime does not count (the binary's pages, kernel buffers) and headroom.
const memoryLimitShare = 0.9

// SetLimit gives the Go runtime a soft memory limit of 90% of the
// container's (cgroup v2 memory.max, or v1 memory.limit_in_bytes, read under
// root: cgroup.go), unless GOMEMLIMIT is set (not empty), which the runtime
// has then applied and which wins. Near the limit the collector then runs
// sooner instead of the container being killed for memory; far from it
// nothing changes (GOGC still paces collections). It returns the limit set, 0 if none.
func SetLimit(log *slog.Logger, root string) int64 {
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		log.Debug("memory: GOMEMLIMIT is set; the container's limit is not read", "GOMEMLIMIT", v)
		return 0
	}
	limit, from := cgroupMemoryLimit(root)
	if limit <= 0 {
		return 0
	}
	soft := int64(float64(limit) * memoryLimitShare)
	debug.SetMemoryLimit(soft)
	log.Info("memory: the Go runtime's soft limit is 90% of the container's; set GOMEMLIMIT to choose another",
		"softLimitBytes", soft, "containerLimitBytes", limit, "from", from)
	return soft
}

// During an initial sync what is live keeps growing (every object listed)
// while garbage is made (frames, pages), so at the runtime's pace (GOGC
// 100) the heap ends near twice what the sync keeps. DuringSync lets the
// heap grow, between collections, by at most the larger of syncHeadroom
// and a quarter of what is live: a small heap keeps the runtime's pace (its
// collections are what costs CPU, and a few MB of headroom cost nothing), a
// large one collects at a pace down to SyncGCPercent. Most of what dynwatch
// keeps is object bytes, which a collection does not scan.
const (
	// SyncGCPercent is the lowest pace DuringSync sets: a quarter of what
	// is live.
	SyncGCPercent = 25
	// syncHeadroom is the growth DuringSync allows at least, whatever is
	// live.
	syncHeadroom = 32 << 20
)

// syncPaceLimit bounds how long DuringSync's pace lasts if the sync never
// ends (a watch that never lists).
const syncPaceLimit = 10 * time.Minute

// syncPace is the pace for live bytes: 100 × max(syncHeadroom, live/4) /
// live, between SyncGCPercent and 100.
func syncPace(live uint64) int {
	if live == 0 {
		return 100
	}
	p := int(100 * max(uint64(syncHeadroom), live/4) / live)
	return min(max(p, SyncGCPercent), 100)
}

// DuringSync sets the pace of syncPace after each collection, until done is
// called (once every informer has listed) or syncPaceLimit has passed, then
// restores the pace before it; with GOGC set it changes nothing.
func DuringSync(log *slog.Logger) (done func()) {
	if os.Getenv("GOGC") != "" { // as the runtime reads it: empty is unset
		return func() {}
	}
	var (
		mu    sync.Mutex
		ended bool
	)
	prev := gcPercent()
	pace := func() bool { // after a collection; false once ended
		mu.Lock()
		defer mu.Unlock()
		if !ended {
			debug.SetGCPercent(syncPace(liveHeap()))
		}
		return !ended
	}
	pace()
	afterEachGC(pace)
	restore := func() {
		mu.Lock()
		defer mu.Unlock()
		if !ended {
			ended = true
			debug.SetGCPercent(prev)
			log.Debug("memory: the initial sync's collection pace ends", "gcPercent", prev)
		}
	}
	t := time.AfterFunc(syncPaceLimit, restore)
	return func() { t.Stop(); restore() }
}

// gcPercent is the pace now.
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 100
	}
	return int(s[0].Value.Uint64())
}

// liveHeap is the heap that the last collection found live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// afterEachGC calls f after each collection (from the finalizer goroutine)
// until it returns false: a fresh object each time, whose finalizer runs
// once a collection has found it unreachable.
func afterEachGC(f func() bool) {
	t := new(gcTick)
	runtime.SetFinalizer(t, func(*gcTick) {
		if f() {
			afterEachGC(f)
		}
	})
}

// gcTick is afterEachGC's object: 16 bytes at least, so that it is not one
// of the tiny allocator's, which share a block and may never be finalized.
type gcTick struct{ _ [16]byte }

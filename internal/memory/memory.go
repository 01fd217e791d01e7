// Package memory sets the Go runtime's memory default of a dynwatch
// process: a soft limit from the container's memory limit, unless the
// environment chooses one (GOMEMLIMIT).
package memory

import (
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"time"
)

// Defaults applies the soft memory limit (SetLimit) unless GOMEMLIMIT is
// set, and logs what it chose.
func Defaults(log *slog.Logger) {
	SetLimit(log, "/")
}

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

// SyncGCPercent is the collection pace of an initial sync, unless GOGC is
// set: the heap may grow by a quarter of what is live before a collection.
// A sync keeps growing what is live (every object it lists) while it makes
// garbage (frames, pages), so at the runtime's pace (100) its peak is about
// twice what it ends up keeping; most of what it keeps is object bytes, which
// a collection does not scan, so the extra collections cost little.
const SyncGCPercent = 25

// syncPaceLimit bounds how long DuringSync's pace lasts if the sync never
// ends (a watch that never lists).
const syncPaceLimit = 10 * time.Minute

// DuringSync sets SyncGCPercent until done is called (once every informer
// has listed) or syncPaceLimit has passed, then restores the pace before it;
// with GOGC set it changes nothing.
func DuringSync(log *slog.Logger) (done func()) {
	if os.Getenv("GOGC") != "" { // as the runtime reads it: empty is unset
		return func() {}
	}
	prev := debug.SetGCPercent(SyncGCPercent)
	var once sync.Once
	restore := func() {
		once.Do(func() {
			debug.SetGCPercent(prev)
			log.Debug("memory: the initial sync's collection pace ends", "gcPercent", prev)
		})
	}
	t := time.AfterFunc(syncPaceLimit, restore)
	return func() { t.Stop(); restore() }
}

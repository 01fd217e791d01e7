// Package memory sets the Go runtime's memory defaults of a dynwatch
// process: a soft limit from the container's memory limit, and a collection
// pace, each unless the environment chooses (GOMEMLIMIT, GOGC).
package memory

import (
	"log/slog"
	"os"
	"runtime/debug"
)

// GCPercent is the collection pace dynwatch runs at unless GOGC is set:
// the heap may grow by half of what is live before a collection, not by all
// of it (the runtime's default, 100). Most of what dynwatch keeps is object
// bytes, which the collector does not scan, so a collection costs little and
// the lower pace mostly lowers the peak of an initial sync.
const GCPercent = 50

// Defaults applies the soft memory limit (SetLimit) and GCPercent, each
// unless its variable is set, and logs what it chose.
func Defaults(log *slog.Logger) {
	SetLimit(log, "/")
	// The runtime takes an empty value for none (GOGC=100, no limit): so
	// does dynwatch.
	if v := os.Getenv("GOGC"); v != "" {
		log.Debug("memory: GOGC is set", "GOGC", v)
		return
	}
	debug.SetGCPercent(GCPercent)
}

// memoryLimitShare is the part of the container's memory limit that
// dynwatch gives the Go runtime as its soft limit: the rest is for what the
// runtime does not count (the binary's pages, kernel buffers) and headroom.
const memoryLimitShare = 0.9

// SetLimit gives the Go runtime a soft memory limit of 90% of the
// container's (cgroup v2 memory.max, or v1 memory.limit_in_bytes, read under
// root: cgroup.go), unless GOMEMLIMIT is set (not empty), which the runtime
// has then applied and which wins. Near the limit the collector then runs sooner instead of the
// container being killed for memory; far from it nothing changes (GOGC still
// paces collections). It returns the limit set, 0 if none.
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

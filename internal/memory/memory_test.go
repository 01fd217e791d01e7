package memory

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func writeFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCgroupMemoryLimit: v2's memory.max and v1's limit_in_bytes are read;
// "max", v1's "unlimited" (a huge number) and no file mean no limit.
func TestCgroupMemoryLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rel, content string
		want         int64
	}{
		{"sys/fs/cgroup/memory.max", "268435456\n", 268435456},
		{"sys/fs/cgroup/memory.max", "max\n", 0},
		{"sys/fs/cgroup/memory/memory.limit_in_bytes", "134217728\n", 134217728},
		{"sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n", 0},
	} {
		root := t.TempDir()
		writeFile(t, root, tc.rel, tc.content)
		if got, _ := cgroupMemoryLimit(root); got != tc.want {
			t.Errorf("%s = %q: limit %d, want %d", tc.rel, tc.content, got, tc.want)
		}
	}
	// The cgroup /proc/self/cgroup names, not the hierarchy's root.
	root := t.TempDir()
	writeFile(t, root, "proc/self/cgroup", "0::/kubepods/pod1/c1\n")
	writeFile(t, root, "sys/fs/cgroup/memory.max", "max\n")
	writeFile(t, root, "sys/fs/cgroup/kubepods/pod1/c1/memory.max", "5000000\n")
	if got, _ := cgroupMemoryLimit(root); got != 5000000 {
		t.Errorf("v2 in a nested cgroup: %d, want 5000000", got)
	}
	root = t.TempDir()
	writeFile(t, root, "proc/self/cgroup", "5:cpu,cpuacct:/x\n4:memory:/kubepods/pod2\n")
	writeFile(t, root, "sys/fs/cgroup/memory/kubepods/pod2/memory.limit_in_bytes", "7000000\n")
	if got, _ := cgroupMemoryLimit(root); got != 7000000 {
		t.Errorf("v1 in a nested cgroup: %d, want 7000000", got)
	}
	if got, _ := cgroupMemoryLimit(t.TempDir()); got != 0 {
		t.Errorf("no cgroup files: %d, want 0", got)
	}
}

// TestSetLimit: without GOMEMLIMIT, the runtime's soft limit becomes
// 90% of the container's; with it, the container's is not read. (Not
// parallel: the limit is the process's, and the environment too.)
func TestSetLimit(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	root := t.TempDir()
	writeFile(t, root, "sys/fs/cgroup/memory.max", "1000000000\n")
	t.Setenv("GOMEMLIMIT", "")
	os.Unsetenv("GOMEMLIMIT")
	if got := SetLimit(log, root); got != 900000000 || debug.SetMemoryLimit(-1) != 900000000 {
		t.Errorf("soft limit %d (runtime %d), want 900000000", got, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(prev)
	t.Setenv("GOMEMLIMIT", "500MiB")
	if got := SetLimit(log, root); got != 0 || debug.SetMemoryLimit(-1) != prev {
		t.Errorf("with GOMEMLIMIT set: soft limit %d, runtime's %d changed", got, debug.SetMemoryLimit(-1))
	}
}

// TestDuringSync: the sync's pace holds until done, which restores the one
// before; with GOGC set nothing changes. (Not parallel: the pace is the
// process's.)
func TestDuringSync(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	done := DuringSync(log)
	if got := debug.SetGCPercent(SyncGCPercent); got != SyncGCPercent {
		t.Errorf("pace during the sync %d, want %d", got, SyncGCPercent)
	}
	done()
	done() // once
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("pace after the sync %d, want 100 back", got)
	}
	t.Setenv("GOGC", "100")
	DuringSync(log)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set: pace %d, want it kept", got)
	}
}

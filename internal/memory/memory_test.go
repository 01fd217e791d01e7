package memory

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
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

// TestDuringSync: the pace follows what is live during the sync (the
// runtime's for a small heap), and done restores the one before; with GOGC
// set nothing changes. (Not parallel: the pace is the process's.)
func TestDuringSync(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	done := DuringSync(log)
	// 200 MiB live: a quarter of it.
	keep := make([][]byte, 200)
	for i := range keep {
		keep[i] = make([]byte, 1<<20)
	}
	runtime.GC()
	testWaitPace(t, SyncGCPercent)
	runtime.KeepAlive(keep)
	keep = nil
	runtime.GC()
	runtime.GC()         // the finalizer of the first may run after the second began
	testWaitPace(t, 100) // a small heap: the runtime's pace
	done()
	done() // once
	runtime.GC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("pace after the sync %d, want 100 back", got)
	}
	debug.SetGCPercent(70)
	runtime.GC()
	if got := debug.SetGCPercent(70); got != 70 {
		t.Errorf("a collection after the sync set the pace to %d", got)
	}
	debug.SetGCPercent(100)
	t.Setenv("GOGC", "100")
	DuringSync(log)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set: pace %d, want it kept", got)
	}
}

// testWaitPace waits for the finalizer goroutine to have set the pace want.
func testWaitPace(t *testing.T, want int) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if gcPercent() == want {
			return
		}
	}
	t.Fatalf("pace did not become %d", want)
}

// TestSyncPace: the runtime's pace up to 32 MiB live, then the growth
// allowed is 32 MiB, down to a quarter of what is live.
func TestSyncPace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		live uint64
		want int
	}{{0, 100}, {10 << 20, 100}, {32 << 20, 100}, {64 << 20, 50}, {128 << 20, 25}, {1 << 30, 25}} {
		if got := syncPace(tc.live); got != tc.want {
			t.Errorf("syncPace(%d MiB) = %d, want %d", tc.live>>20, got, tc.want)
		}
	}
}

// TestCgroupMemoryLimitBindMounted: a container without a cgroup namespace
// (cgroup v1 nodes: runc bind-mounts the container's own cgroup directory
// at /sys/fs/cgroup/memory, while /proc/self/cgroup names its path from the
// host's root) has its limit at the mount's top, not at the path
// /proc/self/cgroup names: mountinfo's root says which cgroup the mount
// shows. Likewise a cgroup v2 mount whose root is the container's cgroup.
func TestCgroupMemoryLimitBindMounted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, cgroup, mountinfo, rel string
	}{{
		name:      "v1, kubelet on a cgroup v1 node",
		cgroup:    "12:pids:/kubepods/burstable/pod1/c1\n11:memory:/kubepods/burstable/pod1/c1\n0::/\n",
		mountinfo: "1290 1289 0:32 /kubepods/burstable/pod1/c1 /sys/fs/cgroup/memory ro,nosuid,nodev,noexec,relatime master:15 - cgroup cgroup rw,memory\n",
		rel:       "sys/fs/cgroup/memory/memory.limit_in_bytes",
	}, {
		name:      "v1, docker",
		cgroup:    "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n",
		mountinfo: "30 25 0:26 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n31 25 0:27 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup cgroup rw,cpu,cpuacct\n",
		rel:       "sys/fs/cgroup/memory/memory.limit_in_bytes",
	}, {
		name:      "v2, the container's cgroup bind-mounted",
		cgroup:    "0::/machine.slice/libpod-abc.scope\n",
		mountinfo: "40 30 0:26 /machine.slice/libpod-abc.scope /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw\n",
		rel:       "sys/fs/cgroup/memory.max",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeFile(t, root, "proc/self/cgroup", tc.cgroup)
			writeFile(t, root, "proc/self/mountinfo", tc.mountinfo)
			writeFile(t, root, tc.rel, "268435456\n")
			if got, from := cgroupMemoryLimit(root); got != 268435456 {
				t.Errorf("limit %d (from %q), want 268435456 from %s", got, from, tc.rel)
			}
		})
	}
}

// TestSetLimitEmptyGOMEMLIMIT: the runtime takes GOMEMLIMIT set to "" as
// not set (no limit), so dynwatch's soft limit applies then too: an empty
// value (a chart's env entry left blank) chooses nothing. (Not parallel:
// the limit is the process's.)
func TestSetLimitEmptyGOMEMLIMIT(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	root := t.TempDir()
	writeFile(t, root, "sys/fs/cgroup/memory.max", "1000000000\n")
	t.Setenv("GOMEMLIMIT", "")
	if got := SetLimit(log, root); got != 900000000 {
		t.Errorf("GOMEMLIMIT empty: soft limit %d, want 900000000", got)
	}
}

// TestCgroupMountinfo: the hierarchy's mount is found by type and
// controller (a hybrid host's cgroup2 at /sys/fs/cgroup/unified has no
// memory.max, so v1's file is read), and mountinfo's escapes are undone.
func TestCgroupMountinfo(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, "proc/self/cgroup", "4:memory:/a b\n0::/\n")
	writeFile(t, root, "proc/self/mountinfo", "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"+
		"35 31 0:32 / /sys/fs/cgroup/mem\\040ory rw - cgroup cgroup rw,memory\n"+
		"41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n")
	writeFile(t, root, "sys/fs/cgroup/mem ory/a b/memory.limit_in_bytes", "123456789\n")
	if got, from := cgroupMemoryLimit(root); got != 123456789 {
		t.Errorf("hybrid: limit %d (from %q), want 123456789", got, from)
	}
	if got := unescapeMount(`a\134b\\c\04`); got != `a\b\\c\04` {
		t.Errorf("unescape: %q", got)
	}
}

package memory

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/dynwatch/dynwatch/internal/dumpable"
)

// cgroupRead is what the helper found: the limit and the file it came from,
// and any error reading the /proc/self files cgroup.go reads.
type cgroupRead struct {
	Limit    int64
	From     string
	Errors   []string
	Dumpable bool
}

func readCgroup() cgroupRead {
	var r cgroupRead
	for _, f := range []string{"/proc/self/cgroup", "/proc/self/mountinfo"} {
		if _, err := os.ReadFile(f); err != nil {
			r.Errors = append(r.Errors, err.Error())
		}
	}
	r.Limit, r.From = cgroupMemoryLimit("/")
	r.Dumpable, _ = dumpable.Dumpable()
	return r
}

func TestHelperNonDumpable(t *testing.T) {
	if os.Getenv("MEMORY_NONDUMPABLE_HELPER") == "" {
		t.Skip("only runs as a helper process")
	}
	if err := dumpable.Disable(); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	b, _ := json.Marshal(readCgroup())
	fmt.Println(string(b))
	os.Exit(0)
}

// A non-dumpable process (run makes itself one) of a user without
// CAP_SYS_PTRACE, whose /proc/self entries the kernel then gives to root,
// still reads its own cgroup and mountinfo, and finds the same limit.
func TestCgroupLimitWhenNotDumpable(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the helper as another user")
	}
	want := readCgroup()
	if want.From == "" {
		t.Skip("no cgroup memory limit file here to compare with")
	}
	dir, err := os.MkdirTemp("", "memory-dumpable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	exe := filepath.Join(dir, "memory.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestHelperNonDumpable$")
	cmd.Env = append(os.Environ(), "MEMORY_NONDUMPABLE_HELPER=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	var got cgroupRead
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("helper said %s", out)
	}
	if got.Dumpable {
		t.Fatal("the helper is still dumpable")
	}
	if len(got.Errors) > 0 || got.Limit != want.Limit || got.From != want.From {
		t.Errorf("not dumpable: %+v; dumpable: limit %d from %s", got, want.Limit, want.From)
	}
}

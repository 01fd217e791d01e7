package testos

import (
	"syscall"
	"testing"
	"unsafe"
)

// LimitFileSize makes every write past size bytes fail with EFBIG in this
// process (the Go runtime ignores SIGXFSZ), as a full disk or a file size
// limit would; the returned func lifts the limit again, and so does the
// test's cleanup. It is process-wide, so the tests that use it do not run in
// parallel.
func LimitFileSize(t testing.TB, size int64) (lift func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: uint64(size), Max: old.Max}); err != nil {
		t.Fatal(err)
	}
	lifted := false
	lift = func() {
		if !lifted {
			lifted = true
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(lift)
	return lift
}

// LimitProcFileSize sets the soft RLIMIT_FSIZE of process pid to cur: its
// writes past cur then fail with EFBIG (the Go runtime ignores SIGXFSZ), as a
// full disk would.
func LimitProcFileSize(t testing.TB, pid int, cur uint64) {
	t.Helper()
	var old syscall.Rlimit
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, 0, uintptr(unsafe.Pointer(&old)), 0, 0); e != 0 {
		t.Fatalf("prlimit: %v", e)
	}
	lim := syscall.Rlimit{Cur: cur, Max: old.Max}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0); e != 0 {
		t.Fatalf("prlimit: %v", e)
	}
}

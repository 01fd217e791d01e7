package dumpable

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Disable makes the calling process non-dumpable. An execve resets the
// flag: a process started afterwards (a command, dynwatch's child under
// the reaper) is dumpable unless it calls Disable itself.
func Disable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl PR_SET_DUMPABLE: %w", err)
	}
	return nil
}

// Dumpable reports whether the calling process is dumpable; where there is
// no such flag, true.
func Dumpable() (bool, error) {
	v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		return true, fmt.Errorf("prctl PR_GET_DUMPABLE: %w", err)
	}
	return v != 0, nil
}

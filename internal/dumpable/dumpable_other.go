//go:build !linux

package dumpable

// Disable does nothing where there is no dumpable flag.
func Disable() error { return nil }

// Dumpable reports whether the calling process is dumpable; where there is
// no such flag, true.
func Dumpable() (bool, error) { return true, nil }

//go:build !linux

package reaper

// Init does nothing outside Linux: it returns false, and dynwatch runs as it is.
func Init() (int, bool) { return 0, false }

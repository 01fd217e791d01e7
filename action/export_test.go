package action

// Hooks that only the package's own tests use. Queue.Down stays exported: the
// watcher's tests read it.

// KindNames returns the names of the kinds in the table.
func KindNames() []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.name
	}
	return out
}

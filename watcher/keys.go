package watcher

import "strings"

// storedKey is the ordering key of a delivery read back from disk. A build
// before this one keyed by resource.version.group/namespace/name; such a key
// is read as group/resource/namespace/name (event.Event.ObjectKey), so that a
// backlog left by it stays ahead of the same object's new events.
func storedKey(k string) string {
	if strings.Count(k, "/") != 2 {
		return k
	}
	res, rest, _ := strings.Cut(k, "/")
	resource, gv, _ := strings.Cut(res, ".")
	_, group, _ := strings.Cut(gv, ".") // the version goes; the group may hold dots
	return group + "/" + resource + "/" + rest
}

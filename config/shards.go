package config

import (
	"fmt"
	"strconv"
	"strings"
)

func (s *Shards) validate(v *validator, p string) {
	if s.Count < 1 {
		v.errf(p+".count", "must be at least 1 (got %d)", s.Count)
	}
	if s.Index != nil && (*s.Index < 0 || (s.Count >= 1 && *s.Index >= s.Count)) {
		v.errf(p+".index", "must be from 0 to count-1 (%d); got %d", s.Count-1, *s.Index)
	}
	if s.By != ShardByUID && s.By != ShardByNamespace {
		v.errf(p+".by", "unknown shard key %q (want %s or %s)", s.By, ShardByUID, ShardByNamespace)
	}
}

// ShardIndex is this process's shard: Index when the file gives it, else the
// ordinal that ends podName ($POD_NAME: a StatefulSet pod "dynwatch-2" is
// shard 2). A podName that is empty, has no ordinal or whose ordinal is not
// below Count is an error that says what to set.
func (s *Shards) ShardIndex(podName string) (int, error) {
	if s.Index != nil {
		return *s.Index, nil
	}
	if podName == "" {
		return 0, fmt.Errorf("shards.index is not set and $POD_NAME is empty: set shards.index, or run in a StatefulSet with POD_NAME from the downward API")
	}
	i := strings.LastIndexByte(podName, '-')
	n, err := strconv.Atoi(podName[i+1:])
	if i < 0 || err != nil || n < 0 || podName[i+1:] != strconv.Itoa(n) {
		return 0, fmt.Errorf("shards.index is not set and $POD_NAME %q does not end in a StatefulSet ordinal (-0, -1, …): set shards.index", podName)
	}
	if n >= s.Count {
		return 0, fmt.Errorf("$POD_NAME %q is shard %d but shards.count is %d: scale the StatefulSet to shards.count", podName, n, s.Count)
	}
	return n, nil
}

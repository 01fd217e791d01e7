package testos

import (
	"os"
	"strconv"
	"strings"
)

// ZombiesUnder returns the zombies among the descendants of root, from
// /proc/*/stat.
func ZombiesUnder(root int) []int {
	entries, _ := os.ReadDir("/proc")
	parent, zombie := map[int]int{}, map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(fields) < 2 {
			continue
		}
		parent[pid], _ = strconv.Atoi(fields[1])
		zombie[pid] = fields[0] == "Z"
	}
	var out []int
	for pid := range zombie {
		if !zombie[pid] {
			continue
		}
		for p := parent[pid]; ; p = parent[p] {
			if p == root {
				out = append(out, pid)
				break
			}
			if p <= 1 {
				break
			}
		}
	}
	return out
}

package memory

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupMemoryLimit is the memory limit of the process's cgroup, in bytes,
// and the file that says it; 0 when there is none ("max", no file, or a v1
// "unlimited", which is a huge number). The cgroup is the one
// /proc/self/cgroup names, found where /proc/self/mountinfo says its
// hierarchy is mounted: in a container with its own cgroup namespace that is
// the root of /sys/fs/cgroup; in one without (cgroup v1 nodes), the runtime
// bind-mounts the container's own cgroup there, which /proc/self/cgroup
// names by its path from the host's root.
func cgroupMemoryLimit(root string) (int64, string) {
	v2, v1 := "/", "/"
	if b, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 {
				continue
			}
			if parts[0] == "0" && parts[1] == "" {
				v2 = parts[2]
			}
			for _, c := range strings.Split(parts[1], ",") {
				if c == "memory" {
					v1 = parts[2]
				}
			}
		}
	}
	m2, m1 := cgroupMounts(root)
	files := append(cgroupDirs(m2, v2, "/sys/fs/cgroup", "memory.max"),
		cgroupDirs(m1, v1, "/sys/fs/cgroup/memory", "memory.limit_in_bytes")...)
	for _, f := range files {
		path := filepath.Join(root, f)
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, path
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || n >= 1<<62 {
			return 0, path
		}
		return n, path
	}
	return 0, ""
}

// cgroupMount is a cgroup hierarchy's mount: the cgroup its top shows
// (mountinfo's root) and where it is mounted.
type cgroupMount struct{ root, point string }

// cgroupMounts reads /proc/self/mountinfo's cgroup2 mounts and its cgroup
// (v1) mounts with the memory controller, in its order.
func cgroupMounts(root string) (v2, v1 []cgroupMount) {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/mountinfo"))
	if err != nil {
		return nil, nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		// 36 35 0:32 /root /point opts [optional fields] - type source super
		left, right, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(left), strings.Fields(right)
		if !ok || len(f) < 5 || len(g) < 1 {
			continue
		}
		m := cgroupMount{root: unescapeMount(f[3]), point: unescapeMount(f[4])}
		switch {
		case g[0] == "cgroup2":
			v2 = append(v2, m)
		case g[0] == "cgroup" && len(g) >= 3 && hasOption(g[2], "memory"):
			v1 = append(v1, m)
		}
	}
	return v2, v1
}

// cgroupDirs are the files that may hold the limit of cgroup, in order: in
// the first of mounts whose top shows it or an ancestor of it, then under
// dflt (where the hierarchy is mounted when mountinfo cannot say).
func cgroupDirs(mounts []cgroupMount, cgroup, dflt, file string) []string {
	var out []string
	for _, m := range mounts {
		rel, ok := underRoot(cgroup, m.root)
		if ok {
			out = append(out, filepath.Join(m.point, rel, file))
			break
		}
	}
	return append(out, filepath.Join(dflt, cgroup, file))
}

// underRoot is cgroup's path below root, the cgroup a mount's top shows;
// false when the mount does not show it (another subtree, or a cgroup
// outside the process's cgroup namespace, "/..").
func underRoot(cgroup, root string) (string, bool) {
	if strings.HasPrefix(cgroup, "/..") {
		return "", false
	}
	if root == "/" {
		return cgroup, true
	}
	rel, ok := strings.CutPrefix(cgroup, root)
	if !ok || (rel != "" && rel[0] != '/') {
		return "", false
	}
	return rel, true
}

func hasOption(opts, name string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// unescapeMount undoes mountinfo's octal escapes of a path (\040 a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

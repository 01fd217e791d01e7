// Package dumpable makes the dynwatch process that runs commands
// non-dumpable (prctl PR_SET_DUMPABLE 0, Linux only). A process of the same
// user may then neither read its /proc/PID/environ, mem or maps nor attach
// to it with ptrace: the commands an exec action runs, which share
// dynwatch's user, cannot read the environment that holds the config's
// ${VAR} secrets. The kernel makes the process's /proc/PID entries root's
// and keeps no core dump of it; the process itself still reads its own
// /proc/self files (cgroup, mountinfo, stat, fd, limits), and root with
// CAP_SYS_PTRACE still reads everything.
package dumpable

// Package reaper lets dynwatch run as PID 1 without an init, as it does in the
// shipped image (FROM scratch). PID 1 is where the kernel sends every orphaned
// process of its PID namespace, such as the background child of a command
// that has exited, and PID 1 must wait for them, or they stay zombies for as
// long as the container runs.
//
// A process that reaps with wait(-1) while it also runs commands through
// os/exec steals their exit statuses (exec.Cmd.Wait then fails with ECHILD),
// and dynwatch is such a process: its exec action, and client-go's exec
// credential plugins. So PID 1 splits in two, as tini and `docker run --init`
// do: the process that is PID 1 starts the same binary with the same
// arguments as its only child, forwards the signals it gets to it, reaps every
// process that ends up its child, and exits as the child does. The child is
// dynwatch proper; it is not PID 1, and it reaps nothing but what os/exec waits
// for. Where dynwatch is not PID 1, an init is there already and Init does
// nothing.
package reaper

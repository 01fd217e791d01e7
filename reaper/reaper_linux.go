package reaper

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// forwarded are the signals the init passes on to dynwatch: stopping
// (SIGTERM from the kubelet, SIGINT), reloading (SIGHUP), a goroutine dump
// (SIGQUIT) and the user signals.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// Init makes the process an init when it is PID 1: it runs dynwatch as its
// child until that child exits and returns the code to exit with, and true.
// When the process is not PID 1, or cannot start its child (no /proc), it
// returns false at once and dynwatch runs as it is.
func Init() (int, bool) {
	if os.Getpid() != 1 {
		return 0, false
	}
	// PID 1 holds dynwatch's environment too (the secrets of the config's
	// ${VAR}s) and runs as its user: not dumpable, a command of that user
	// cannot read /proc/1/environ. The child's execve makes it dumpable
	// again; dynwatch run makes itself non-dumpable as it starts.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "dynwatch: cannot make PID 1 non-dumpable (its environment stays readable by processes of its user): %v\n", err)
	}
	return run("/proc/self/exe", os.Args, os.Environ())
}

// run starts path as the child, then forwards signals to it and reaps every
// child until it exits.
func run(path string, argv, env []string) (int, bool) {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...) // before the start: none is lost
	defer signal.Stop(sigs)
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "dynwatch: running as PID 1 without reaping orphaned processes: cannot start itself as the child of an init: %v\n", err)
		return 0, false
	}
	exited := make(chan syscall.WaitStatus, 1)
	go reap(pid, exited)
	for {
		select {
		case s := <-sigs:
			_ = syscall.Kill(pid, s.(syscall.Signal))
		case ws := <-exited:
			return exitCode(ws), true
		}
	}
}

// reap waits for every child: the orphans the kernel hands to PID 1 as they
// exit, and dynwatch, whose status it sends on exited. Nothing else in this
// process starts processes, so wait(-1) takes no status someone else awaits.
func reap(child int, exited chan<- syscall.WaitStatus) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil: // ECHILD: the child is gone without a status
			exited <- syscall.WaitStatus(1 << 8)
			return
		case pid == child && (ws.Exited() || ws.Signaled()):
			exited <- ws
			return
		}
	}
}

// exitCode is what a shell makes of a status: the exit code, or 128 plus
// the signal that killed the process.
func exitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// proc is a running child and what it reported.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	synced chan struct{} // closed on HEAP, which follows SYNCED
	cpus   chan time.Duration
	stats  chan [2]int64
	exited chan struct{}

	sync time.Duration
	heap int64
	recv int64 // bytes received until synced
	// From REQS (dynwatch): discovery requests and resources watched by
	// the initial sync, and goroutines then.
	discovery, resources, goroutines int64
	// From REQSEND (dynwatch): discovery requests by the time it stopped.
	discoveryEnd int64

	logs fmt.Stringer // a peer's last logs, for errors

	mu  sync.Mutex
	lat []time.Duration

	// ownRSS is the peak RSS the process reported (children) or that was
	// read before it was stopped (a peer): its own. The rusage's maxrss is
	// not, on Linux: it is at least the parent's RSS when it forked.
	ownRSS int64

	// From the process's rusage once it has exited; rss is ownRSS when known.
	rss int64 // bytes
	cpu time.Duration
	// anon is the peak anonymous RSS the parent sampled (sampleAnon).
	anon atomic.Int64
}

func start(mode, kubeconfig string, v variant, ns, state, profile string, extra ...string) (*proc, error) {
	cmd := exec.Command(os.Args[0], append([]string{"-child", mode, "-kubeconfig", kubeconfig, "-variant", v.name, "-ns", ns, "-state", state, "-profile", profile}, extra...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &proc{name: mode, cmd: cmd, stdin: stdin, synced: make(chan struct{}), cpus: make(chan time.Duration, 1), stats: make(chan [2]int64, 1), exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go p.read(stdout)
	go p.sampleAnon()
	return p, nil
}

// sampleAnon reads the process's anonymous resident memory (RssAnon: its
// heap, stacks and runtime, not the pages of its binary, which VmHWM counts
// too) every 10 ms until it exits, and keeps the highest reading. The
// kernel keeps no high-water mark of it, hence the sampling: a peak shorter
// than 10 ms can be missed. The parent reads it, so the reading is not
// charged to the process's CPU (at 100 reads a second of /proc's status,
// it was a tenth of a measured sync's).
func (p *proc) sampleAnon() {
	pid := strconv.Itoa(p.cmd.Process.Pid)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if n := statusKB(pid, "RssAnon:") * 1024; n > p.anon.Load() {
			p.anon.Store(n)
		}
		select {
		case <-p.exited:
			return
		case <-t.C:
		}
	}
}

func (p *proc) read(r io.Reader) {
	defer close(p.exited)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		word, args := f[0], make([]int64, len(f)-1)
		for i, a := range f[1:] {
			args[i], _ = strconv.ParseInt(a, 10, 64)
		}
		n := args[0]
		switch word {
		case "SYNCED":
			p.sync = time.Duration(n)
		case "RECV":
			p.recv = n
		case "HEAP":
			p.heap = n
			close(p.synced)
		case "LAT":
			p.mu.Lock()
			p.lat = append(p.lat, time.Duration(n))
			p.mu.Unlock()
		case "CPU":
			p.cpus <- time.Duration(n)
		case "STAT":
			if len(args) == 2 {
				p.stats <- [2]int64{args[0], args[1]}
			}
		case "REQSEND":
			p.discoveryEnd = n
		case "RSS":
			p.ownRSS = n
		case "REQS":
			if len(args) == 3 {
				p.discovery, p.resources, p.goroutines = args[0], args[1], args[2]
			}
		}
	}
}

func (p *proc) waitSynced(timeout time.Duration) error {
	select {
	case <-p.synced:
		return nil
	case <-p.exited:
		_ = p.cmd.Wait()
		if p.logs != nil {
			return fmt.Errorf("%s exited before its initial sync: %s", p.name, p.logs)
		}
		return fmt.Errorf("%s exited before its initial sync", p.name)
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("%s did not sync within %s", p.name, timeout)
	}
}

// cpuNow asks the child for its CPU time so far.
func (p *proc) cpuNow() (time.Duration, error) {
	if _, err := io.WriteString(p.stdin, "CPU\n"); err != nil {
		return 0, err
	}
	select {
	case d := <-p.cpus:
		return d, nil
	case <-time.After(30 * time.Second):
		return 0, errors.New(p.name + " did not report its CPU time")
	}
}

// stat asks the child for its goroutines and live heap.
func (p *proc) stat() (goroutines, heap int64, err error) {
	if _, err := io.WriteString(p.stdin, "STAT\n"); err != nil {
		return 0, 0, err
	}
	select {
	case s := <-p.stats:
		return s[0], s[1], nil
	case <-time.After(30 * time.Second):
		return 0, 0, errors.New(p.name + " did not report its goroutines and heap")
	}
}

func (p *proc) latencies() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Duration(nil), p.lat...)
}

// stop closes the child's stdin, which ends it, and reads its rusage.
func (p *proc) stop() error {
	if p.name == "peer" {
		p.ownRSS = peakRSS(strconv.Itoa(p.cmd.Process.Pid))
	}
	_ = p.stdin.Close()
	if p.name == "peer" {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	done := make(chan error, 1)
	go func() {
		<-p.exited
		if p.name == "peer" { // its Wait is the one that closed exited
			done <- nil
			return
		}
		done <- p.cmd.Wait()
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		_ = p.cmd.Process.Kill()
		err = errors.New(p.name + " did not stop")
	}
	if p.cmd.ProcessState == nil {
		return err
	}
	if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		p.rss = ru.Maxrss * 1024
		if p.ownRSS > 0 {
			p.rss = p.ownRSS
		}
		p.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return err
}

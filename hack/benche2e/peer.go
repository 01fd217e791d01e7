package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// startPeer runs another watcher binary on the objects, its arguments the
// words of args with {kubeconfig} and {ns} filled in. A peer says nothing
// the harness reads: it is taken as synced once its CPU time has not moved
// for settle after it first moved (its initial list is done), and its sync
// time is when it last moved. It is stopped with SIGTERM (and its stdin
// closed); RSS and CPU are its rusage, as for the children.
func startPeer(path, args, kubeconfig, ns string) (*proc, error) {
	var argv []string
	for _, a := range strings.Fields(args) {
		argv = append(argv, strings.NewReplacer("{kubeconfig}", kubeconfig, "{ns}", ns).Replace(a))
	}
	cmd := exec.Command(path, argv...)
	tail := &tailBuffer{}
	cmd.Stdout, cmd.Stderr = nil, tail // a peer's own logs: their end, should it fail
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	p := &proc{name: "peer", cmd: cmd, stdin: stdin, synced: make(chan struct{}), exited: make(chan struct{}), logs: tail}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	go p.watchCPU(began, 2*time.Second)
	go p.sampleAnon()
	return p, nil
}

// watchCPU closes p.synced once the process's CPU time stops moving.
func (p *proc) watchCPU(began time.Time, settle time.Duration) {
	last, lastMoved := int64(-1), time.Now()
	for {
		select {
		case <-p.exited:
			return
		case <-time.After(100 * time.Millisecond):
		}
		cpu := procCPU(p.cmd.Process.Pid)
		if cpu != last {
			last, lastMoved = cpu, time.Now()
			continue
		}
		if cpu > 0 && time.Since(lastMoved) >= settle {
			p.sync = lastMoved.Sub(began)
			close(p.synced)
			return
		}
	}
}

// procCPU is the process's utime+stime in clock ticks, from /proc.
func procCPU(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s) // f[0] is the state, field 3 of stat
	if len(f) < 13 {
		return -1
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

// tailBuffer keeps the last 2 KB written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2048 {
		t.buf = t.buf[len(t.buf)-2048:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

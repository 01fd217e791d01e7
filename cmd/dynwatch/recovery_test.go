package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// gate is a TCP proxy to the test API server on addr: closed, nothing
// listens there (a connection is refused); opened, it forwards.
type gate struct {
	addr, target string
}

func newGate(t *testing.T, target string) *gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // closed: refused until open
	return &gate{addr: ln.Addr().String(), target: target}
}

// open listens on the gate's address again and forwards from then on.
func (g *gate) open(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", g.addr)
	if err != nil {
		t.Fatalf("reopen %s (another process took the port meanwhile?): %v", g.addr, err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { forward(c, g.target) })
		}
	})
}

func forward(c net.Conn, target string) {
	defer c.Close()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// An API server that cannot be reached at start is said at WARN and retried;
// once it answers, dynwatch says so, watches, and delivers.
func TestRecoversWhenTheAPIServerComesBack(t *testing.T) {
	d, ns := setupTail(t)
	g := newGate(t, strings.TrimPrefix(cp.URL, "https://"))
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig, testenv.AdminToken); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// The same server certificate (issued for 127.0.0.1), through the gate.
	raw = []byte(strings.ReplaceAll(string(raw), cp.URL, "https://"+g.addr))
	if err := os.WriteFile(kubeconfig, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, dir, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules: [{name: all, resources: [{group: tail.example.com, resource: gadgets}], namespaces: [%s], actions: [out]}]
`, ns))
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", kubeconfig)
	p.waitLog(`level=WARN msg="cannot reach the API server; retrying"`, 10*time.Second)
	p.waitLog("connection refused", time.Second)
	g.open(t)
	p.waitLog("API server reached", 30*time.Second)
	p.waitLog("all informers synced", 30*time.Second)
	if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, "after", map[string]any{"n": int64(1)}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !hasAdd(p.payloads(), "after") {
		if time.Now().After(deadline) {
			t.Fatalf("no event once the API server was back:\n%s", p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.stopOK(syscall.SIGTERM)
}

func hasAdd(ps []event.Payload, name string) bool {
	for _, p := range ps {
		if p.Name == name && p.Type == event.Add {
			return true
		}
	}
	return false
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// With state.path, dynwatch is killed with SIGKILL while its NATS server is
// down; restarted, with the server up, it delivers every event to the
// stream, once each, in order per object.
func TestKillNineWhileBusDown(t *testing.T) {
	d, ns := setupTail(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions:
  - name: stream
    concurrency: 8
    nats: {url: %q, subject: "dw.{{ .name }}", timeout: 1s, retry: {max: 1000, initialBackoff: 50ms, maxBackoff: 200ms}}
rules:
  - name: gadgets
    resources: [{group: tail.example.com, resource: gadgets}]
    namespaces: [%s]
    actions: [stream]
`, filepath.Join(dir, "state.db"), url, ns))
	first := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig, "--log-level", "debug")
	first.waitLog("state: baseline recorded", 30*time.Second)
	addAndBump(t, d, ns, 5)
	deadline := time.Now().Add(30 * time.Second)
	for log := first.stderr.String(); !strings.Contains(log, "action failing") || strings.Count(log, `msg="rule matched"`) < 10; log = first.stderr.String() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for the action to fail and every event to be seen:\n%s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = first.cmd.Process.Signal(syscall.SIGKILL)
	<-first.exited

	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	st, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "DW", Subjects: []string{"dw.>"}})
	if err != nil {
		t.Fatal(err)
	}
	second := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	deadline = time.Now().Add(30 * time.Second)
	for {
		info, err := st.Info(context.Background())
		if err == nil && info.State.Msgs >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream holds %v messages, want 10:\n%s", info, second.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	second.stopOK(syscall.SIGTERM)
	info, _ := st.Info(context.Background())
	types := map[string][]string{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(context.Background(), seq)
		if err != nil {
			t.Fatal(err)
		}
		var pl struct{ Name, Type string }
		_ = json.Unmarshal(m.Data, &pl)
		types[pl.Name] = append(types[pl.Name], pl.Type)
	}
	for i := range 5 {
		if got := strings.Join(types[fmt.Sprint("k", i)], ","); got != "add,update" {
			t.Errorf("k%d: %s, want add,update (every event once, in order)", i, got)
		}
	}
}

// A run's CloudEvents name the API server's URL as their source.
func TestRunCloudEventsSource(t *testing.T) {
	d, ns := setupTail(t)
	got := make(chan []byte, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
	}))
	defer srv.Close()
	cfg := writeConfig(t, t.TempDir(), fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
actions:
  - name: ce
    webhook: {url: %q, format: cloudevents}
rules:
  - name: gadgets
    resources: [{group: tail.example.com, resource: gadgets}]
    namespaces: [%s]
    actions: [ce]
`, srv.URL, ns))
	p := startProc(t, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
	p.waitLog("all informers synced", 30*time.Second)
	if _, err := d.Resource(gadgetGVR).Namespace(ns).Create(t.Context(), gadget(ns, "g", map[string]any{"n": int64(0)}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		var ev struct{ Source, Subject, Type string }
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatalf("not a structured CloudEvent: %s", b)
		}
		if ev.Source != cp.URL || ev.Type != "io.dynwatch.add" || ev.Subject != "/apis/tail.example.com/v1/namespaces/"+ns+"/gadgets/g" {
			t.Errorf("source %q (want %q), type %q, subject %q", ev.Source, cp.URL, ev.Type, ev.Subject)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no event:\n%s", p.stderr.String())
	}
	p.stopOK(syscall.SIGTERM)
}

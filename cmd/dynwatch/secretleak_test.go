package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// secretVar is the environment variable the leak test's config expands into
// every credential field.
const secretVar = "DW_LEAK_SECRET"

// leakSinks are the receivers of the leak test: a webhook receiver, Kafka
// with SASL PLAIN, NATS with a token and NATS with a user and password, each
// recording what it was given besides the credential itself.
type leakSinks struct {
	mu       sync.Mutex
	received [][]byte // bodies and headers, the credential's own header left out
	counts   map[string]int

	hook                    *httptest.Server
	kafka                   *kfake.Cluster
	natsToken, natsUser     *server.Server
	natsTokenURL, natsUserU string
}

func (s *leakSinks) record(where string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received = append(s.received, b)
	s.counts[where]++
}

func (s *leakSinks) count(where string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[where]
}

func startLeakSinks(t *testing.T, secret string) *leakSinks {
	t.Helper()
	s := &leakSinks{counts: map[string]int{}}
	s.hook = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h := r.Header.Clone()
		h.Del("Authorization") // the credential's own headers
		h.Del("X-Api-Key")
		hb, _ := json.Marshal(h)
		s.record(strings.Split(r.URL.Path, "/")[1], append(body, hb...))
		if strings.HasPrefix(r.URL.Path, "/echo") {
			// A receiver that says back what it refused.
			http.Error(w, "invalid credentials: "+r.Header.Get("Authorization")+" for "+r.URL.String(), http.StatusUnauthorized)
		}
	}))
	t.Cleanup(s.hook.Close)
	var err error
	s.kafka, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "leak"), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "u-"+secret, secret))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.kafka.Close)
	s.natsToken = startLeakNATS(t, &server.Options{Authorization: secret})
	s.natsUser = startLeakNATS(t, &server.Options{Username: "dwuser", Password: secret})
	s.natsTokenURL, s.natsUserU = s.natsToken.ClientURL(), s.natsUser.ClientURL()
	for _, sub := range []struct {
		name string
		opt  nats.Option
		url  string
	}{
		{"nats-token", nats.Token(secret), s.natsTokenURL},
		{"nats-user", nats.UserInfo("dwuser", secret), s.natsUserU},
	} {
		nc, err := nats.Connect(sub.url, sub.opt)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		if _, err := nc.Subscribe("dw.>", func(m *nats.Msg) {
			hb, _ := json.Marshal(m.Header)
			s.record(sub.name, append(append([]byte(m.Subject), m.Data...), hb...))
		}); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func startLeakNATS(t *testing.T, o *server.Options) *server.Server {
	t.Helper()
	o.Host, o.Port, o.NoLog, o.NoSigs = "127.0.0.1", -1, true, true
	srv, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	return srv
}

// kafkaRecords reads what the leak test's topic holds, as the receiver would.
func (s *leakSinks) kafkaRecords(t *testing.T, secret string) [][]byte {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.kafka.ListenAddrs()...), kgo.ConsumeTopics("leak"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SASL(plain.Auth{User: "u-" + secret, Pass: secret}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	var out [][]byte
	for ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			hb, _ := json.Marshal(r.Headers)
			out = append(out, append(append(append([]byte{}, r.Key...), r.Value...), hb...))
		})
	}
	return out
}

// leakScript writes an executable script (a shebang: exec runs no shell).
func leakScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func leakConfig(t *testing.T, s *leakSinks, dir, ns string, opsPort int) string {
	t.Helper()
	deadPort := freeLoopbackPort(t)
	env := leakScript(t, dir, "printenv.sh", "env\nexit 3\n")
	parent := leakScript(t, dir, "parentenv.sh", "tr '\\0' '\\n' < /proc/$PPID/environ\nexit 3\n")
	v := "${" + secretVar + "}"
	retry := "retry: {max: 2, initialBackoff: 100ms, maxBackoff: 200ms}"
	cfg := fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %[1]s}
server: {address: "127.0.0.1:%[2]d"}
actions:
  - name: out
    log: {}
  - name: hook
    webhook:
      url: "%[3]s/ok/%[4]s?token=%[4]s"
      headers: {Authorization: "Bearer %[4]s", X-Api-Key: "%[4]s"}
  - name: hook-userinfo
    webhook: {url: "http://dwuser:%[4]s@%[5]s/userinfo"}
  - name: hook-refused
    webhook: {url: "%[3]s/echo/%[4]s?token=%[4]s", headers: {Authorization: "Bearer %[4]s"}, %[6]s}
  - name: hook-down
    webhook: {url: "http://dwuser:%[4]s@127.0.0.1:%[7]d/down/%[4]s?token=%[4]s", headers: {Authorization: "Bearer %[4]s"}, timeout: 1s, %[6]s}
  - name: kafka
    kafka: {brokers: [%[8]q], topic: leak, sasl: {mechanism: PLAIN, username: "u-%[4]s", password: "%[4]s"}}
  - name: kafka-refused
    kafka: {brokers: [%[8]q], topic: leak, sasl: {mechanism: PLAIN, username: "u-%[4]s", password: "%[4]s-wrong"}, timeout: 2s, %[6]s}
  - name: nats-token
    nats: {url: %[9]q, subject: dw.token, token: "%[4]s", jetstream: false}
  - name: nats-user
    nats: {url: "nats://dwuser:%[4]s@%[10]s", subject: dw.user, jetstream: false}
  - name: nats-refused
    nats: {url: "nats://dwuser:%[4]s-wrong@%[10]s", subject: dw.refused, jetstream: false, timeout: 1s, %[6]s}
  - name: nats-token-refused
    nats: {url: %[9]q, subject: dw.refused, token: "%[4]s-wrong", jetstream: false, timeout: 1s, %[6]s}
  - name: printenv
    exec: {command: [%[11]q], env: {TOKEN: "%[4]s"}, %[6]s}
  - name: parentenv
    exec: {command: [%[12]q], %[6]s}
rules:
  - name: cms
    resources: [{group: "", resource: configmaps}]
    namespaces: [%[13]s]
    actions: [out, hook, hook-userinfo, hook-refused, hook-down, kafka, kafka-refused, nats-token, nats-user, nats-refused, nats-token-refused, printenv, parentenv]
`, filepath.Join(dir, "state.db"), opsPort, s.hook.URL, v, strings.TrimPrefix(s.hook.URL, "http://"), retry, deadPort,
		s.kafka.ListenAddrs()[0], s.natsTokenURL, strings.TrimPrefix(s.natsUserU, "nats://"), env, parent, ns)
	return writeConfig(t, dir, cfg)
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// A secret the config takes from the environment (${VAR} in every field that
// takes one: webhook URLs, their path, query and userinfo, headers, exec env,
// kafka's SASL login, nats tokens and URL userinfo) reaches no output of any
// command: run's stdout and its logs at debug level, /metrics, /readyz,
// /healthz, the state file, what the receivers were given besides the
// credential itself, and check's, rbac's, test's, audit's, tail's and
// version's output. Receivers that refuse the login or say the credential
// back, and commands that print their environment or dynwatch's, included.
func TestNoSecretInAnyOutput(t *testing.T) {
	d, ns := clustersNamespace(t)
	secret := "DWLEAK" + strings.ToUpper(hex.EncodeToString(randBytes(8)))
	sinks := startLeakSinks(t, secret)
	dir := t.TempDir()
	opsPort := freeLoopbackPort(t)
	cfg := leakConfig(t, sinks, dir, ns, opsPort)
	withSecret := func(c *exec.Cmd) { c.Env = append(os.Environ(), secretVar+"="+secret) }

	outputs, log := runLeakDaemon(t, d, sinks, ns, cfg, opsPort, withSecret)
	state, err := os.ReadFile(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	outputs["state file"] = state
	sinks.mu.Lock()
	outputs["receivers"] = bytes.Join(sinks.received, []byte("\n"))
	sinks.mu.Unlock()
	records := sinks.kafkaRecords(t, secret)
	if len(records) == 0 {
		t.Errorf("kafka holds no record")
	}
	outputs["kafka records"] = bytes.Join(records, []byte("\n"))
	maps.Copy(outputs, otherCommandsOutputs(t, dir, ns, cfg, withSecret))

	for _, name := range slices.Sorted(maps.Keys(outputs)) {
		var lines []string
		for l := range bytes.Lines(outputs[name]) {
			if bytes.Contains(l, []byte(secret)) && len(lines) < 20 {
				lines = append(lines, string(l[:min(len(l), 600)]))
			}
		}
		if len(lines) > 0 {
			t.Errorf("%s holds the secret, as in:\n%s", name, strings.Join(lines, "\n"))
		}
	}
	// The commands' output reaches the log, masked; dynwatch's own environment
	// only where the command could read it (root: CAP_SYS_PTRACE).
	if !strings.Contains(log, "TOKEN=<redacted>") {
		t.Errorf("run's log has no TOKEN=<redacted> (printenv's output, masked):\n%s", log)
	}
	if !strings.Contains(log, secretVar+"=<redacted>") && !strings.Contains(log, "Permission denied") {
		t.Errorf("run's log has neither %s=<redacted> nor a refused read of /proc/$PPID/environ:\n%s", secretVar, log)
	}
}

// runLeakDaemon runs dynwatch run with the leak config at debug level until
// an event reached every receiver and every failing action logged its
// failure, and returns its outputs (stdout, stderr, /metrics, /readyz,
// /healthz) and its log.
func runLeakDaemon(t *testing.T, d dynamic.Interface, sinks *leakSinks, ns, cfg string, opsPort int, withSecret func(*exec.Cmd)) (map[string][]byte, string) {
	t.Helper()
	outputs := map[string][]byte{}
	run := startProcWith(t, withSecret, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig, "--log-level", "debug")
	run.waitLog("serving /metrics", 30*time.Second)
	run.waitLog("state: baseline recorded", 30*time.Second)
	if _, err := d.Resource(cmResource).Namespace(ns).Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "leak"}, "data": map[string]any{"k": "v"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, where := range []string{"ok", "userinfo", "echo", "nats-token", "nats-user"} {
		for sinks.count(where) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("nothing reached %s:\n%s", where, run.stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, failing := range []string{"hook-refused", "hook-down", "kafka-refused", "nats-refused", "nats-token-refused", "printenv", "parentenv"} {
		waitFailureLogged(t, run, failing)
	}
	for _, path := range []string{"/metrics", "/readyz", "/healthz"} {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", opsPort, path))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		outputs["run "+path] = b
	}
	if err := run.stop(syscall.SIGTERM); err != nil {
		t.Errorf("run: %v", err)
	}
	outputs["run stderr"] = []byte(run.stderr.String())
	payloads, _ := json.Marshal(run.payloads())
	outputs["run stdout"] = payloads
	return outputs, run.stderr.String()
}

// otherCommandsOutputs runs check, rbac, test, audit, version and tail with
// the leak config and returns their stdout and stderr.
func otherCommandsOutputs(t *testing.T, dir, ns, cfg string, withSecret func(*exec.Cmd)) map[string][]byte {
	t.Helper()
	outputs := map[string][]byte{}
	cmFile := filepath.Join(dir, "cm.yaml")
	if err := os.WriteFile(cmFile, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: leak, namespace: "+ns+"}\ndata: {k: v}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"check", "--config", cfg, "--log-level", "debug"},
		{"check", "--strict", "--config", cfg, "--log-level", "debug"},
		{"rbac", "--config", cfg, "--log-level", "debug"},
		{"test", "--config", cfg, "--rule", "cms", "--new", cmFile, "--explain", "--log-level", "debug"},
		{"audit", "--config", cfg, "--kubeconfig", cp.Kubeconfig, "--log-level", "debug"},
		{"version", "--log-level", "debug"},
	} {
		cmd := exec.Command(bin, args...)
		withSecret(cmd)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		_ = cmd.Run() // findings and warnings exit non-zero; the output is what counts
		outputs[args[0]+" stdout"] = append(outputs[args[0]+" stdout"], out.Bytes()...)
		outputs[args[0]+" stderr"] = append(outputs[args[0]+" stderr"], errOut.Bytes()...)
		if out.Len()+errOut.Len() == 0 {
			t.Errorf("%v printed nothing", args)
		}
	}
	tail := startProcWith(t, withSecret,
		"tail", "configmaps", "-n", ns, "--config", cfg, "--kubeconfig", cp.Kubeconfig, "--log-level", "debug", "-o", "json", "--initial")
	tail.waitLog("following", 30*time.Second)
	tail.stopOK(syscall.SIGINT)
	outputs["tail stderr"] = []byte(tail.stderr.String())
	tailOut, _ := json.Marshal(tail.payloads())
	outputs["tail stdout"] = tailOut
	if len(tail.payloads()) == 0 {
		t.Errorf("tail printed no payload")
	}
	return outputs
}

// waitFailureLogged waits for a log line of action's with a delivery error.
func waitFailureLogged(t *testing.T, p *proc, action string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		for _, l := range strings.Split(p.stderr.String(), "\n") {
			if strings.Contains(l, "action="+action+" ") && strings.Contains(l, " err=") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failure of %s logged:\n%s", action, p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

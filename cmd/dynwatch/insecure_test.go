package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/internal/testenv"
)

// insecureConfig sends a Kafka password with SASL PLAIN and a webhook's
// Authorization header, both in clear.
const insecureConfig = `apiVersion: dynwatch/v1alpha1
actions:
  - name: bus
    kafka:
      brokers: [127.0.0.1:9]
      topic: events
      sasl: {mechanism: PLAIN, username: dynwatch, password: pw}
  - name: hook
    webhook:
      url: http://127.0.0.1:9/events
      headers: {Authorization: Bearer tok}
rules: [{name: cms, resources: [{group: "", resource: configmaps}], actions: [bus, hook]}]
`

// check prints each credential sent in clear as a warning at its line and
// exits 0; --strict, or security.allowInsecure: false in the file, makes
// them problems (exit 2), and run refuses to start on them.
func TestCheckInsecure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, insecureConfig)
	const (
		kafka = "actions[0].kafka.sasl.mechanism: "
		plain = "SASL PLAIN without tls sends the password to the brokers in clear: set tls, or use SCRAM-SHA-256 or SCRAM-SHA-512, which never send it"
		hook  = "actions[1].webhook.headers.Authorization: "
		auth  = "the Authorization header crosses the network in clear to http://127.0.0.1:9: use an https:// URL"
		warn  = " (--strict or security.allowInsecure: false makes this an error)"
	)
	code, stdout, stderr := runBin(t, "check", "--config", cfg)
	if code != exitOK || !strings.Contains(stdout, "ok: 1 rule(s), 2 action(s)") {
		t.Errorf("check: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	if want := cfg + ":7: " + kafka + "warning: " + plain + warn + "\n" + cfg + ":11: " + hook + "warning: " + auth + warn + "\n"; stderr != want {
		t.Errorf("check: stderr\n%s\nwant\n%s", stderr, want)
	}
	for _, args := range [][]string{{"check", "--strict"}, {"run", "--strict", "--kubeconfig", cp.Kubeconfig}} {
		code, stdout, stderr = runBin(t, append(args, "--config", cfg)...)
		want := cfg + ":7: " + kafka + plain + " (refused: --strict)\n" + cfg + ":11: " + hook + auth + " (refused: --strict)\n" +
			cfg + ": 2 problem(s)" + map[bool]string{true: "; nothing was started"}[args[0] == "run"] + "\n"
		if code != exitUsage || stdout != "" || stderr != want {
			t.Errorf("%s: exit %d, stdout %q, stderr\n%s\nwant exit 2 and\n%s", strings.Join(args, " "), code, stdout, stderr, want)
		}
	}
	cfg = writeConfig(t, dir, strings.Replace(insecureConfig, "actions:\n", "security: {allowInsecure: false}\nactions:\n", 1))
	for _, args := range [][]string{{"check"}, {"run", "--kubeconfig", cp.Kubeconfig}} {
		code, _, stderr = runBin(t, append(args, "--config", cfg)...)
		if want := cfg + ":8: " + kafka + plain + " (refused: security.allowInsecure is false)\n"; code != exitUsage || !strings.HasPrefix(stderr, want) {
			t.Errorf("%s with allowInsecure: false: exit %d, stderr\n%s\nwant exit 2 and\n%s", args[0], code, stderr, want)
		}
	}
}

// recorder is an HTTP receiver on loopback that keeps the bytes of every
// request as they came over the wire.
type recorder struct {
	ln   net.Listener
	mu   sync.Mutex
	wire bytes.Buffer
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { r.serve(c) })
		}
	})
	return r
}

// serve answers every request on c with 200, keeping its bytes.
func (r *recorder) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(io.TeeReader(c, r))
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"); err != nil {
			return
		}
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wire.Write(p)
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wire.String()
}

// startRun starts `dynwatch run` on cfg with extra arguments and the
// environment variables env, and returns its stdout and stderr.
func startRun(t *testing.T, cfg string, env []string, args ...string) (stdout, stderr *testenv.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"run", "--config", cfg, "--kubeconfig", cp.Kubeconfig, "--config-check-interval", "100ms"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stdout, stderr = &testenv.Buffer{}, &testenv.Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitOutput(t, stderr, "dynwatch to watch", func(s string) bool { return strings.Contains(s, "all informers synced") })
	return stdout, stderr
}

// What the warning says is what the wire shows: run logs, at start and at
// each reload, that the webhook's Authorization header goes in clear, and a
// receiver on loopback reads the secret in the request's bytes.
func TestRunWarnsOfWhatCrossesInClear(t *testing.T) {
	t.Parallel()
	const secret = "HOOK-TOKEN-S3CRET"
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := testenv.Namespace(t, d)
	rec := newRecorder(t)
	url := "http://" + rec.ln.Addr().String()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	write := func(extra string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
actions:
  - name: hook
    webhook:
      url: %s/events
      headers: {Authorization: "Bearer ${DYNWATCH_TEST_HOOK_SECRET}"%s}
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [hook]}]
`, url, extra, ns)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("")
	_, stderr := startRun(t, cfg, []string{"DYNWATCH_TEST_HOOK_SECRET=" + secret})
	logged := fmt.Sprintf(`level=WARN msg="the Authorization header crosses the network in clear to %s: use an https:// URL (--strict or security.allowInsecure: false makes this an error)" file=%s line=6 field=actions[0].webhook.headers.Authorization`, url, cfg)
	if !strings.Contains(stderr.String(), logged) {
		t.Errorf("run did not log at start\n%s\nstderr:\n%s", logged, stderr.String())
	}
	cm := &unstructured.Unstructured{Object: testenv.ConfigMap(ns, "c0", map[string]any{"k": "v"})}
	if _, err := d.Resource(cmsGVR).Namespace(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(rec.String(), "Authorization: Bearer "+secret+"\r\n") {
		if time.Now().After(deadline) {
			t.Fatalf("the receiver did not read the secret on the wire:\n%s\nstderr:\n%s", rec.String(), stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	write(", X-Source: dynwatch")
	waitOutput(t, stderr, "the reload", func(s string) bool { return strings.Contains(s, `msg="config reloaded"`) })
	if n := strings.Count(stderr.String(), logged); n != 2 {
		t.Errorf("the warning logged %d times, want at start and at the reload:\n%s", n, stderr.String())
	}
	if strings.Contains(stderr.String(), secret) {
		t.Errorf("run logged the secret:\n%s", stderr.String())
	}
}

// Under --strict a reload to a file that sends a credential in clear is
// refused, and the running config stays.
func TestRunStrictRefusesInsecureReload(t *testing.T) {
	t.Parallel()
	d := dynamic.NewForConfigOrDie(cp.Config)
	ns := testenv.Namespace(t, d)
	rec := newRecorder(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	head := "apiVersion: dynwatch/v1alpha1\nactions:\n  - {name: out, log: {}}\n"
	rules := func(actions string) string {
		return fmt.Sprintf("rules: [{name: cms, resources: [{group: \"\", resource: configmaps}], namespaces: [%s], actions: [%s]}]\n", ns, actions)
	}
	if err := os.WriteFile(cfg, []byte(head+rules("out")), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr := startRun(t, cfg, nil, "--strict")
	bad := head + "  - name: hook\n    webhook:\n      url: http://" + rec.ln.Addr().String() + "/events\n      headers: {Authorization: Bearer tok}\n" + rules("out, hook")
	if err := os.WriteFile(cfg, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	s := waitOutput(t, stderr, "the refused reload", func(s string) bool { return strings.Contains(s, "config not reloaded") })
	want := fmt.Sprintf(`level=ERROR msg="invalid config: the Authorization header crosses the network in clear to http://%s: use an https:// URL (refused: --strict)" file=%s line=7 field=actions[1].webhook.headers.Authorization`, rec.ln.Addr(), cfg)
	if !strings.Contains(s, want) {
		t.Errorf("stderr lacks\n%s\n%s", want, s)
	}
	if strings.Contains(s, `msg="config reloaded"`) {
		t.Errorf("the reload was applied:\n%s", s)
	}
	cm := &unstructured.Unstructured{Object: testenv.ConfigMap(ns, "c0", map[string]any{"k": "v"})}
	if _, err := d.Resource(cmsGVR).Namespace(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, stdout, "the old config's log action", func(s string) bool { return strings.Contains(s, `"name":"c0"`) })
	if got := rec.String(); got != "" {
		t.Errorf("the refused webhook was sent to:\n%s", got)
	}
}

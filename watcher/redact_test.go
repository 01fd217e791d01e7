package watcher

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A Secret's value appears in no output of any action, nor in dynwatch's own
// logs at debug level: not in clear, not base64-encoded, not in the
// last-applied-configuration annotation, not in oldObject.
func TestSecretValuesNeverLeave(t *testing.T) {
	const sentinel = "SENTINEL-5f3a9c-do-not-leak"
	b64 := base64.StdEncoding.EncodeToString([]byte(sentinel))
	ns := namespace(t)
	dir := t.TempDir()

	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer srv.Close()
	script := filepath.Join(dir, "record.sh")
	execOut := filepath.Join(dir, "exec.out")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >> "+execOut+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "audit.jsonl")

	r := startWith(t, fmt.Sprintf(`
apiVersion: dynwatch/v1alpha1
actions:
  - {name: stdout, log: {}}
  - {name: file, log: {path: %q}}
  - name: hook
    webhook: {url: %q}
  - name: templated
    webhook: {url: %q, body: '{"obj": {{ json .object }}, "data": {{ get .object "data.password" | json }}}'}
  - {name: run, exec: {command: [%q]}}
rules:
  - name: secrets
    resources: [{group: "", resource: secrets}]
    namespaces: [%s]
    fields: {password: data.password, raw: data}
    actions: [stdout, file, hook, templated, run]
`, logFile, srv.URL, srv.URL, script, ns), debugLogs)
	create(t, secretGVR, ns, map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "s", "namespace": ns, "annotations": map[string]any{
			"kubectl.kubernetes.io/last-applied-configuration": `{"stringData":{"password":"` + sentinel + `"}}`}},
		"stringData": map[string]any{"password": sentinel},
	})
	mutate(t, secretGVR, ns, "s", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, b64+"Cg==", "data", "password")
		_ = unstructured.SetNestedField(u.Object, b64, "data", "other")
	})
	remove(t, secretGVR, ns, "s")
	r.out.wait(t, 3, eventWait)
	waitUntil(t, "every action to deliver 3 events", 20*time.Second, func() bool {
		mu.Lock()
		n := len(bodies)
		mu.Unlock()
		execData, _ := os.ReadFile(execOut)
		fileData, _ := os.ReadFile(logFile)
		return n == 6 && strings.Count(string(execData), "\n") == 3 && strings.Count(string(fileData), "\n") == 3
	})

	mu.Lock()
	outputs := map[string]string{
		"stdout":   strings.Join(r.out.rawLines(), "\n"),
		"webhooks": strings.Join(bodies, "\n"),
		"own logs": r.logs.String(),
	}
	mu.Unlock()
	for name, path := range map[string]string{"log file": logFile, "exec stdin": execOut} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		outputs[name] = string(b)
	}
	for name, out := range outputs {
		for _, secret := range []string{sentinel, b64} {
			if strings.Contains(out, secret) {
				t.Errorf("%s holds the secret value %q", name, secret)
			}
		}
		if name != "own logs" && !strings.Contains(out, "<redacted>") {
			t.Errorf("%s shows no <redacted> value: the test saw no payload\n%s", name, out)
		}
	}
	if !strings.Contains(outputs["own logs"], "level=DEBUG") {
		t.Error("own logs were not captured at debug level")
	}
}

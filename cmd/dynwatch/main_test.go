package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

var (
	cp  *testenv.Env
	bin string // the dynwatch binary, built once
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	routeKlogs = func(slog.Handler, int) {} // commands run side by side here; the binary's tests see the routing
	dir, err := os.MkdirTemp("", "dynwatch-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "dynwatch")
	// DYNWATCH_TEST_NORACE builds the binary the processes run without the race
	// detector, for measurements; the tests themselves do not change.
	buildArgs := []string{"build", "-race", "-o", bin, "."}
	if os.Getenv("DYNWATCH_TEST_NORACE") != "" {
		buildArgs = []string{"build", "-o", bin, "."}
	}
	if out, err := exec.Command("go", buildArgs...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build dynwatch: %v\n%s", err, out)
		return 1
	}
	cp, err = testenv.Start(testenv.Options{Users: []testenv.User{{Name: cmOnlyUser, Token: cmOnlyToken}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cp.Stop()
	return m.Run()
}

// runCLI runs a command in process and returns its exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli(context.Background(), &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}, args)
	return code, out.String(), errOut.String()
}

func TestHelpOnEveryCommand(t *testing.T) {
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			for _, args := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
				code, stdout, stderr := runCLI(t, args...)
				if code != exitOK || stderr != "" {
					t.Errorf("%v: exit %d, want 0; stderr %q", args, code, stderr)
				}
				if !strings.Contains(stdout, "Usage: dynwatch "+c.name) {
					t.Errorf("%v: help on stdout does not show usage:\n%s", args, stdout)
				}
				if !strings.Contains(stdout, "--kubeconfig") || !strings.Contains(stdout, "--context") {
					t.Errorf("%v: help lacks --kubeconfig or --context:\n%s", args, stdout)
				}
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"wat"}, `unknown command "wat"`},
		{"misspelt command", []string{"chek"}, "Did you mean this?\n\tcheck"},
		{"run without config", []string{"run"}, "--config FILE is required"},
		{"check without config", []string{"check"}, "--config FILE is required"},
		{"bad flag", []string{"check", "--nope"}, "unknown flag: --nope"},
		{"bad output", []string{"resources", "-o", "xml"}, "want table or json"},
		{"misspelt help topic", []string{"help", "tial"}, `dynwatch help: unknown help topic "tial"; did you mean "tail"?`},
		{"unknown help topic", []string{"help", "xyzzy"}, `dynwatch help: unknown help topic "xyzzy"`},
		{"misspelt help subtopic", []string{"help", "completion", "bsh"}, `dynwatch help: unknown help topic "completion bsh"; did you mean "completion bash"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want 2", code)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr)
			}
			// The error first, then one line pointing to --help, not the whole usage.
			if lines := strings.Split(strings.TrimSpace(stderr), "\n"); !strings.HasPrefix(lines[len(lines)-1], "Run 'dynwatch") || len(lines) > 5 {
				t.Errorf("a usage error should be the error and one line pointing to --help:\n%s", stderr)
			}
		})
	}
	// No command: the help, on stdout; --version; flags after the argument.
	if code, stdout, _ := runCLI(t); code != exitOK || !strings.Contains(stdout, "Available Commands:") {
		t.Errorf("no command: exit %d\n%s", code, stdout)
	}
	if code, stdout, _ := runCLI(t, "--version"); code != exitOK || stdout != "dynwatch "+version+"\n" {
		t.Errorf("--version: exit %d, %q", code, stdout)
	}
	if code, _, stderr := runCLI(t, "resources", "apps", "--kubeconfig", "/nonexistent/kubeconfig"); code == exitOK || !strings.Contains(stderr, "/nonexistent/kubeconfig") {
		t.Errorf("a flag after the argument was ignored: exit %d, %s", code, stderr)
	}
	for args, want := range map[string]string{"help": "Available Commands:", "help help": "Help provides help for any command"} {
		if code, stdout, stderr := runCLI(t, strings.Fields(args)...); code != exitOK || stderr != "" || !strings.Contains(stdout, want) {
			t.Errorf("%s: exit %d, stderr %q\n%s", args, code, stderr, stdout)
		}
	}
	// help TOPIC prints what TOPIC --help prints, and completes as cobra's help does.
	if code, stdout, _ := runCLI(t, "help", "completion", "bash"); code != exitOK || !strings.Contains(stdout, "Generate the autocompletion script for the bash shell") ||
		!strings.Contains(stdout, "help for bash") {
		t.Errorf("help completion bash: exit %d\n%s", code, stdout)
	}
	for args, want := range map[string]string{"help ta": "tail\tfollow", "help completion z": "zsh\tGenerate"} {
		code, stdout, _ := runCLI(t, append([]string{"__complete"}, strings.Fields(args)...)...)
		if lines := strings.Split(stdout, "\n"); code != exitOK || len(lines) < 2 || !strings.HasPrefix(lines[0], want) || strings.HasPrefix(lines[1], "test") {
			t.Errorf("__complete %s: exit %d\n%s", args, code, stdout)
		}
	}
	if code, stdout, _ := runCLI(t, "completion", "bash"); code != exitOK || !strings.Contains(stdout, "bash completion") {
		t.Errorf("completion bash: exit %d", code)
	}
}

func TestCheck(t *testing.T) {
	code, stdout, _ := runCLI(t, "check", "--config", "../../config.example.yaml")
	if code != exitOK || !strings.Contains(stdout, "ok: 2 rule(s), 2 action(s)") {
		t.Errorf("example config: exit %d, stdout %q", code, stdout)
	}
	code, _, stderr := runCLI(t, "check", "--config", "../../plan/testdata/invalid-values.yaml")
	want, err := os.ReadFile("../../plan/testdata/invalid-values.want")
	if err != nil {
		t.Fatal(err)
	}
	if code != exitUsage {
		t.Errorf("invalid config: exit %d, want 2", code)
	}
	// The same problems as the plan package reports, every one, with the path given.
	for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
		if !strings.Contains(stderr, "../../plan/"+line) {
			t.Errorf("stderr lacks %q:\n%s", line, stderr)
		}
	}
	code, _, stderr = runCLI(t, "check", "--config", "does-not-exist.yaml")
	if code != exitUsage || !strings.Contains(stderr, "no such file") {
		t.Errorf("missing file: exit %d, stderr %q", code, stderr)
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := runCLI(t, "version")
	for _, want := range []string{"dynwatch ", "commit: ", "go: go1.", "client-go: "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("version output lacks %q:\n%s", want, stdout)
		}
	}
	if code != exitOK {
		t.Errorf("exit %d", code)
	}
}

func TestResourcesJSON(t *testing.T) {
	code, stdout, stderr := runCLI(t, "resources", "-o", "json", "--kubeconfig", cp.Kubeconfig, "--group", "core")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var list []discovery.Resource
	if err := json.Unmarshal([]byte(stdout), &list); err != nil {
		t.Fatalf("not a JSON list: %v\n%s", err, stdout)
	}
	var found bool
	for _, r := range list {
		if r.Group != "" {
			t.Errorf("--group core listed %s", r.Group)
		}
		if r.Resource == "configmaps" {
			found = true
			if r.Kind != "ConfigMap" || !r.Namespaced || r.Version != "v1" || !r.Preferred || !r.Watchable() || len(r.ShortNames) == 0 || r.ShortNames[0] != "cm" {
				t.Errorf("configmaps = %+v", r)
			}
		}
	}
	if !found {
		t.Error("configmaps not listed")
	}
	code, stdout, _ = runCLI(t, "resources", "--kubeconfig", cp.Kubeconfig, "--group", "apps")
	if code != exitOK || !strings.Contains(stdout, "deployments") || !strings.Contains(stdout, "apps/v1") || strings.Contains(stdout, "configmaps") {
		t.Errorf("table for apps: exit %d\n%s", code, stdout)
	}
}

// TestRunProcess runs the real binary: it delivers events to stdout, logs to
// stderr only, and stops with exit 0 on SIGTERM and on SIGINT.
func TestRunProcess(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			ns := fmt.Sprintf("run-%d", time.Now().UnixNano()%1000000)
			d := dynamic.NewForConfigOrDie(cp.Config)
			nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
			cmGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
			if _, err := d.Resource(nsGVR).Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(t.TempDir(), "config.yaml")
			os.WriteFile(cfg, []byte(fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
actions: [{name: stdout, log: {}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [stdout]}]
`, ns)), 0o600)
			cmd := exec.Command(bin, "run", "--config", cfg, "--kubeconfig", cp.Kubeconfig)
			stdout, _ := cmd.StdoutPipe()
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			lines := make(chan string, 16)
			go func() {
				sc := bufio.NewScanner(stdout)
				sc.Buffer(nil, 1<<20)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			// dynwatch may not be watching yet: create ConfigMaps until one shows up.
			var got event.Payload
			deadline := time.After(30 * time.Second)
		wait:
			for i := 0; ; i++ {
				if _, err := d.Resource(cmGVR).Namespace(ns).Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": fmt.Sprint("c", i)}}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				select {
				case line := <-lines:
					if err := json.Unmarshal([]byte(line), &got); err != nil {
						t.Fatalf("stdout line is not a payload: %v: %s", err, line)
					}
					break wait
				case <-time.After(time.Second):
				case <-deadline:
					t.Fatalf("no event on stdout; stderr:\n%s", stderr.String())
				}
			}
			if got.Rule != "cms" || got.Type != event.Add || got.Namespace != ns {
				t.Errorf("payload = %+v", got)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("exit after %s: %v\n%s", sig, err, stderr.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("still running 30s after %s", sig)
			}
			if !strings.Contains(stderr.String(), "dynwatch stopped") {
				t.Errorf("stderr lacks the stop message:\n%s", stderr.String())
			}
		})
	}
}

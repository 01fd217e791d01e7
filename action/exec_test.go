package action

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
)

// TestHelperProcess is not a test: exec tests run the test binary as the
// command. HELPER_MODE (from the action's env) says what to do, HELPER_OUT
// where to write what it saw.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("HELPER_MODE")
	if mode == "" {
		t.Skip("only runs as a helper process")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	switch mode {
	case "record":
		stdin, _ := io.ReadAll(os.Stdin)
		env := map[string]string{}
		for _, k := range []string{"DYNWATCH_TYPE", "DYNWATCH_RULE", "DYNWATCH_NAMESPACE", "DYNWATCH_NAME", "DYNWATCH_KIND", "DYNWATCH_EVENT_ID"} {
			env[k] = os.Getenv(k)
		}
		b, _ := json.Marshal(map[string]any{"args": args, "env": env, "stdin": string(stdin), "environ": os.Environ()})
		_ = os.WriteFile(os.Getenv("HELPER_OUT"), b, 0o600)
	case "fail":
		fmt.Fprintln(os.Stderr, "helper says no")
		os.Exit(3)
	case "printenv":
		// A failing command that says its environment, then TOKEN twice and
		// HELPER_PAD bytes after it.
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		n, _ := strconv.Atoi(os.Getenv("HELPER_PAD"))
		fmt.Print("first=" + os.Getenv("TOKEN") + " again=" + os.Getenv("TOKEN") + strings.Repeat("y", n))
		os.Exit(3)
	case "background":
		// A child left running that holds the command's stdout and stderr.
		child := exec.Command("sleep", "300")
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		_ = child.Start()
		_ = os.WriteFile(os.Getenv("HELPER_OUT"), []byte(strconv.Itoa(child.Process.Pid)), 0o600)
		fmt.Println("started a background child")
	case "hang":
		// A child in the same process group, as a script's subprocess would be.
		child := exec.Command("sleep", "300")
		_ = child.Start()
		_ = os.WriteFile(os.Getenv("HELPER_OUT"), []byte(strconv.Itoa(child.Process.Pid)), 0o600)
		time.Sleep(300 * time.Second)
	}
	os.Exit(0)
}

func execAction(t *testing.T, mode string, timeout string, extraArgs ...string) (*Exec, string) {
	t.Helper()
	return execActionEnv(t, mode, timeout, "{}", extraArgs...)
}

// execActionEnv is execAction with more of the action's env, a YAML flow map.
func execActionEnv(t *testing.T, mode, timeout, env string, extraArgs ...string) (*Exec, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	argv := append([]string{os.Args[0], "-test.run=^TestHelperProcess$", "--"}, extraArgs...)
	quoted, _ := json.Marshal(argv)
	f, err := config.Parse("t.yaml", []byte(fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
actions: [{name: x, exec: {command: %s, timeout: %s, env: %s}}]
rules: [{name: r, resources: [{kind: ConfigMap}], actions: [x]}]
`, quoted, timeout, env)))
	if err != nil {
		t.Fatal(err)
	}
	spec := f.Config.Actions[0].Exec
	spec.Env["HELPER_MODE"], spec.Env["HELPER_OUT"] = mode, out
	return NewExec(spec), out
}

func TestExecReceivesArgvEnvAndStdin(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "pwned")
	evil := fmt.Sprintf("$(touch %[1]s); touch %[1]s; `touch %[1]s` | touch %[1]s && touch %[1]s", marker)
	x, out := execAction(t, "record", "10s", "--from", "dynwatch", evil)
	pl := &event.Payload{
		ID: "u1:5:update", Type: event.Update, Rule: "rule-1", Namespace: "ns-1", Name: "name-1",
		Resource: event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true},
		Object:   json.RawMessage(`{"data":{"cmd":` + strconv.Quote(evil) + `}}`),
	}
	b, _ := json.Marshal(pl)
	if err := x.Send(context.Background(), &event.Delivery{Payload: pl, JSON: b, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Args  []string
		Env   map[string]string
		Stdin string
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Args) != fmt.Sprint([]string{"--from", "dynwatch", evil}) {
		t.Errorf("argv = %q", got.Args)
	}
	wantEnv := map[string]string{"DYNWATCH_TYPE": "update", "DYNWATCH_RULE": "rule-1", "DYNWATCH_NAMESPACE": "ns-1",
		"DYNWATCH_NAME": "name-1", "DYNWATCH_KIND": "ConfigMap", "DYNWATCH_EVENT_ID": "u1:5:update"}
	for k, v := range wantEnv {
		if got.Env[k] != v {
			t.Errorf("%s = %q, want %q", k, got.Env[k], v)
		}
	}
	if got.Stdin != string(b)+"\n" {
		t.Errorf("stdin = %q, want the payload as one JSON line %q", got.Stdin, string(b)+"\n")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("shell metacharacters in object data or argv were executed")
	}
}

func TestExecNonZeroExitIsRetried(t *testing.T) {
	x, _ := execAction(t, "fail", "10s")
	var logs logBuffer
	q := NewQueue("x", x, QueueOptions{Retry: Retry{Max: 2, Initial: time.Millisecond, MaxBackoff: time.Millisecond}, Logger: logs.logger()})
	runQueue(t, q)
	q.Enqueue(delivery("o", 1))
	waitFor(t, "the failure", 20*time.Second, func() bool { return q.Stats().Failed == 1 })
	if st := q.Stats(); st.Retries != 2 {
		t.Errorf("retries = %d, want 2", st.Retries)
	}
	if log := logs.String(); !strings.Contains(log, "exit status 3") || !strings.Contains(log, "helper says no") {
		t.Errorf("log lacks the exit status and output:\n%s", log)
	}
}

func TestExecTimeoutKillsProcessGroup(t *testing.T) {
	x, out := execAction(t, "hang", "1s")
	start := time.Now()
	err := x.Send(context.Background(), delivery("o", 1))
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Send took %s with a 1s timeout", d)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 1 {
		// pid 0 or -1 would make the checks below target the test's own process group.
		t.Fatalf("the helper wrote no pid (%q): %v", raw, err)
	}
	waitFor(t, "the grandchild to die", 5*time.Second, func() bool {
		// Reap it if it is our zombie; kill -0 fails once it is gone.
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		return syscall.Kill(pid, 0) != nil || isZombie(pid)
	})
}

func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] == "Z"
}

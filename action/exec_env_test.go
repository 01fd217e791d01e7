package action

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// A command gets PATH and the few variables passedEnv names from dynwatch's
// environment, exec.env and the DYNWATCH_* variables: never the rest of
// dynwatch's environment, where the secrets of webhook headers live.
func TestExecEnvironmentIsMinimal(t *testing.T) {
	t.Setenv("HOOK_TOKEN", "s3cret-token")
	t.Setenv("TZ", "Europe/Paris")
	t.Setenv("NOTIFY_KEY", "k3y")
	x, out := execActionEnv(t, "record", "10s", `{EXTRA: plain, FROM_VAR: "key=${NOTIFY_KEY}", TZ: UTC}`)
	if err := x.Send(context.Background(), delivery("o", 1)); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Environ []string }
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range got.Environ {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	want := map[string]string{"PATH": os.Getenv("PATH"), "EXTRA": "plain", "FROM_VAR": "key=k3y", "TZ": "UTC", "DYNWATCH_RULE": "r"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	allowed := append(slices.Clone(passedEnv), "EXTRA", "FROM_VAR", "HELPER_MODE", "HELPER_OUT")
	for k := range env {
		if !slices.Contains(allowed, k) && !strings.HasPrefix(k, "DYNWATCH_") {
			t.Errorf("the command got %s from dynwatch's environment", k)
		}
	}
	if strings.Contains(string(raw), "s3cret-token") {
		t.Errorf("a secret of dynwatch's environment reached the command:\n%s", raw)
	}
}

func TestCommandEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		have  map[string]string
		extra map[string]string
		want  string
	}{
		{"no PATH: a default one", map[string]string{"SECRET": "x"}, nil, "[PATH=" + defaultPath + "]"},
		{"passed on, in name order", map[string]string{"PATH": "/p", "HOME": "/h", "LANG": "C.UTF-8", "SECRET": "x"}, nil, "[HOME=/h LANG=C.UTF-8 PATH=/p]"},
		{"exec.env overrides", map[string]string{"PATH": "/p"}, map[string]string{"PATH": "/q", "A": "1"}, "[A=1 PATH=/q]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tt.have[k]; return v, ok }
			if got := fmt.Sprint(commandEnv(lookup, tt.extra)); got != tt.want {
				t.Errorf("env = %s, want %s", got, tt.want)
			}
		})
	}
}

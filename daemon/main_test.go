package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dynwatch/dynwatch/internal/testenv"
	"github.com/dynwatch/dynwatch/plan"
)

// env is the real control plane every test in this package shares.
var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	env.Stop()
	os.Exit(code)
}

// loadPlan writes yaml to a config file in a fresh directory and loads it.
func loadPlan(t *testing.T, yaml string) *plan.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := plan.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return file
}

package daemon

import (
	"fmt"
	"os"
	"testing"

	"github.com/dynwatch/dynwatch/internal/testenv"
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

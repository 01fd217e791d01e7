package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// When rbac cannot print its RBAC, it says why and exits 1: a silent exit 1
// (what it did when WriteYAML failed, its own check included) leaves the user
// with an empty file and no reason.
func TestRBACSaysWhyItPrintsNothing(t *testing.T) {
	t.Parallel()
	var errOut bytes.Buffer
	code := cli(context.Background(), &env{stdin: strings.NewReader(""), stdout: failingWriter{}, stderr: &errOut},
		[]string{"rbac", "--config", "testdata/rbac-exact.yaml"})
	if code != exitFailure || !strings.Contains(errOut.String(), "dynwatch rbac: ") || !strings.Contains(errOut.String(), "no space left on device") {
		t.Errorf("exit %d, stderr %q: want 1 and the reason", code, errOut.String())
	}
}

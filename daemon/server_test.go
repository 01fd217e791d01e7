package daemon

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// /readyz names why a watch fails by the API's reason only: the error's text
// (who the ServiceAccount is, the request URL and its query) stays in the logs.
func TestReadyzReasonOnly(t *testing.T) {
	t.Parallel()
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "",
		errors.New(`User "system:serviceaccount:ops:dynwatch" cannot list resource "secrets" in API group "" in the namespace "prod"`))
	for _, c := range []struct {
		err  error
		want string
	}{
		{forbidden, "Forbidden"},
		{fmt.Errorf("list secrets: %w", forbidden), "Forbidden"},
		{apierrors.NewNotFound(schema.GroupResource{Resource: "widgets"}, ""), "NotFound"},
		{&url.Error{Op: "Get", URL: "https://10.0.0.1/api/v1/secrets?token=abc&labelSelector=x", Err: errors.New("connection refused")}, "error (see the logs)"},
	} {
		if got := reasonOf(c.err); got != c.want {
			t.Errorf("reasonOf(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// /readyz names a refused state commit by the system's reason only: the
// error's text names the state file's path.
func TestReadyzStateReasonOnly(t *testing.T) {
	t.Parallel()
	full := fmt.Errorf("commit: %w", &os.PathError{Op: "write", Path: "/var/lib/secret-team/state.db", Err: syscall.EFBIG})
	if got, want := stateReason(full), "file too large"; got != want {
		t.Errorf("stateReason(%v) = %q, want %q", full, got, want)
	}
	resize := errors.New("file resize error: truncate /var/lib/secret-team/state.db: file too large")
	if got, want := stateReason(resize), "file too large"; got != want {
		t.Errorf("stateReason(%v) = %q, want %q", resize, got, want)
	}
	if got, want := stateReason(errors.New("tx closed at /var/lib/x")), "see the logs"; got != want {
		t.Errorf("stateReason = %q, want %q", got, want)
	}
}

package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"
)

// A subject template that renders an empty token — {{.namespace}} for a
// cluster-scoped object, or a name with a leading, trailing or doubled '.'
// (RBAC names allow them) — is no subject a stream can store: that event
// fails for good, at once, rather than look like a server that is down and
// stall every other object behind probes until its retries run out.
func TestNATSSubjectEmptyTokenIsPermanent(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	ns.stream(t)
	s := buildAction(t, fmt.Sprintf(`nats: {url: %q, subject: "dw.{{.namespace}}.{{.name}}", timeout: 2s}`, ns.url()))
	for _, c := range []struct{ namespace, name string }{{"", "x"}, {"ns", "y."}, {"ns", "a..b"}, {"ns", ".z"}} {
		d := cmDelivery(c.name, 0)
		d.Payload.Namespace = c.namespace
		d.JSON, _ = json.Marshal(d.Payload)
		start := time.Now()
		err := s.Send(context.Background(), d)
		var f *Failure
		if !errors.As(err, &f) || !f.Permanent {
			t.Errorf("%s/%s: got %v after %s, want a permanent failure", c.namespace, c.name, err, time.Since(start).Round(time.Millisecond))
		}
	}
	if err := s.Send(context.Background(), cmDelivery("ok", 0)); err != nil {
		t.Errorf("a subject with no empty token: %v", err)
	}
}

package action

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A topic template that renders a name Kafka refuses (a '/', a space, over
// 249 characters) fails that event for good, at once: it is no outage of the
// broker, which must not make the whole action down and stall the others.
func TestKafkaInvalidTopicIsPermanent(t *testing.T) {
	t.Parallel()
	c := newKfake(t, 0)
	s := buildAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: "{{.namespace}}/{{.name}}", timeout: 2s}`, c.ListenAddrs()[0]))
	for _, name := range []string{"a", "a b", strings.Repeat("x", 250)} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		start := time.Now()
		err := s.Send(ctx, cmDelivery(name, 0))
		cancel()
		var f *Failure
		if !errors.As(err, &f) || !f.Permanent {
			t.Errorf("name %.20q: got %v after %s, want a permanent failure", name, err, time.Since(start).Round(time.Millisecond))
		}
	}
}

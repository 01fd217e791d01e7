package action

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A JetStream action whose messages land in a stream with a duplicate
// window shorter than its retry.maxBackoff says so once, at WARN, with the
// stream, its window and the backoff; a stream whose window is long enough
// gets no word, and core NATS (no stream) none either.
func TestJetStreamDuplicateWindowWarn(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	nc := ns.connect(t)
	js, _ := jetstream.New(nc)
	for name, window := range map[string]time.Duration{"SHORT": 30 * time.Second, "LONG": 10 * time.Minute} {
		subject := strings.ToLower(name) + ".>"
		if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Duplicates: window, Storage: jetstream.MemoryStorage}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, kind string
		warn       bool
	}{
		{"short", `nats: {url: %q, subject: "short.{{.name}}", retry: {maxBackoff: 1m}}`, true},
		{"long", `nats: {url: %q, subject: "long.{{.name}}", retry: {maxBackoff: 5m}}`, false},
		{"core", `nats: {url: %q, subject: "short.{{.name}}", jetstream: false}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs logBuffer
			s := buildNamedAction(t, c.name, fmt.Sprintf(c.kind, ns.url()), Env{Source: testSource, Logger: logs.logger()})
			for i := range 3 {
				if err := s.Send(context.Background(), cmDelivery(fmt.Sprint("cm", i), 0)); err != nil {
					t.Fatal(err)
				}
			}
			s.(*NATS).windows.wait() // the look runs beside the deliveries
			warns := strings.Count(logs.String(), "level=WARN")
			switch {
			case c.warn && warns != 1:
				t.Errorf("%d warnings, want one:\n%s", warns, logs.String())
			case c.warn:
				for _, want := range []string{"duplicate window", "action=short", "stream=SHORT", "duplicateWindow=30s", "maxBackoff=1m0s"} {
					if !strings.Contains(logs.String(), want) {
						t.Errorf("the warning lacks %q:\n%s", want, logs.String())
					}
				}
			case warns != 0:
				t.Errorf("a warning for a window long enough (or no stream):\n%s", logs.String())
			}
		})
	}
}

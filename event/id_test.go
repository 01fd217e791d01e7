package event

import (
	"testing"
	"time"
)

// A change's id names its type; a timer's names the second it fell due,
// whatever its event's type and time: one id per wait that fell due.
func TestID(t *testing.T) {
	t.Parallel()
	obj := []byte(`{"metadata":{"namespace":"ns","name":"a","uid":"u1","resourceVersion":"7"}}`)
	ev := New(Update, Resource{Version: "v1", Resource: "configmaps"}, obj, nil, time.Now())
	if got, want := ev.ID(), "u1:7:update"; got != want {
		t.Errorf("ID %q, want %q", got, want)
	}
	due := time.Date(2026, 12, 7, 20, 0, 0, 500_000_000, time.UTC)
	ev.Timed = &Timed{Rule: "r", Due: due}
	if got, want := ev.ID(), "u1:7:timer@1796673600500000000"; got != want {
		t.Errorf("timer's ID %q, want %q", got, want)
	}
	later := New(Add, ev.Resource, obj, nil, time.Now().Add(time.Hour))
	later.Timed = &Timed{Rule: "other", Due: due.In(time.FixedZone("x", 3600)), Late: true}
	if later.ID() != ev.ID() {
		t.Errorf("one wait's ids differ: %q, %q", later.ID(), ev.ID())
	}
}

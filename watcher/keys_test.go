package watcher

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/action"
	"github.com/dynwatch/dynwatch/event"
)

func TestStoredKey(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, stored, want string }{
		{"this build's key", "move.example.com/movers/ns/m1", "move.example.com/movers/ns/m1"},
		{"this build's core key", "/configmaps/ns/x", "/configmaps/ns/x"},
		{"this build's cluster-scoped key", "/namespaces//x", "/namespaces//x"},
		{"an earlier build's key", "movers.v1.move.example.com/ns/m1", "move.example.com/movers/ns/m1"},
		{"an earlier build's core key", "configmaps.v1/ns/x", "/configmaps/ns/x"},
		{"an earlier build's cluster-scoped key", "namespaces.v1//x", "/namespaces//x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := storedKey(tt.stored); got != tt.want {
				t.Errorf("storedKey(%q) = %q, want %q", tt.stored, got, tt.want)
			}
		})
	}
}

// heldSender holds the first attempt of the payload named first until it is
// let go, and reports every attempt.
type heldSender struct {
	first    string
	release  chan struct{}
	attempts chan string
	once     sync.Once
}

func (s *heldSender) Send(ctx context.Context, d *event.Delivery) error {
	s.attempts <- d.Payload.ResourceVersion
	if d.Payload.ResourceVersion == s.first {
		s.once.Do(func() { <-s.release })
	}
	return nil
}

// An object's event seen through v2 of its resource, after the watch moved
// from v1, waits behind the event of the same object still queued from v1: it
// is not attempted while that one is in flight, however many workers are free.
func TestOrderingKeyAcrossVersions(t *testing.T) {
	t.Parallel()
	v1 := event.Resource{Group: "move.example.com", Version: "v1", Resource: "movers", Kind: "Mover", Namespaced: true}
	v2 := v1
	v2.Version = "v2"
	delivery := func(res event.Resource, rv string) *event.Delivery {
		ev := event.New(event.Update, res, []byte(`{"metadata":{"namespace":"ns","name":"m1","uid":"u1","resourceVersion":"`+rv+`"}}`), nil, time.Now())
		return &event.Delivery{Payload: &event.Payload{ResourceVersion: rv}, JSON: []byte(`{}`), Key: ev.ObjectKey()}
	}
	s := &heldSender{first: "1", release: make(chan struct{}), attempts: make(chan string, 4)}
	q := action.NewQueue("hook", s, action.QueueOptions{Concurrency: 4})
	q.Enqueue(delivery(v1, "1"))
	q.Enqueue(delivery(v2, "2"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx, 10*time.Second) }()
	defer func() { cancel(); <-done }()

	if rv := <-s.attempts; rv != "1" {
		t.Fatalf("first attempt of resourceVersion %s, want 1", rv)
	}
	// Nothing can be waited for here: the point is that the v2 event is not
	// attempted while the v1 one is in flight.
	select {
	case rv := <-s.attempts:
		t.Errorf("resourceVersion %s attempted while the object's earlier event was in flight", rv)
	case <-time.After(300 * time.Millisecond):
	}
	close(s.release)
	select {
	case rv := <-s.attempts:
		if rv != "2" {
			t.Errorf("then resourceVersion %s, want 2", rv)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the v2 event was never attempted")
	}
}

package action

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// buildKafkaAction builds a kafka sender and what closes it, as a reload
// does: the caller closes it once its queue has stopped.
func buildKafkaAction(t *testing.T, kindYAML string) (Sender, io.Closer) {
	t.Helper()
	a, _ := compileFirst(t, oneAction("sink", kindYAML))
	s, closer, err := a.Build(Env{Source: testSource})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return s, closer
}

// runThenClose runs q until the test ends and closes its sender once Run has
// returned, as the watcher's action set does with a queue a reload replaced.
func runThenClose(t *testing.T, q *Queue, closer io.Closer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		_ = q.Run(ctx, time.Second)
		_ = closer.Close()
		close(done)
	}()
	t.Cleanup(func() {
		q.Halt()
		cancel()
		<-done
	})
}

// A reload that rebuilds a kafka action hands its backlog to a new client
// while the old client still has a record of object a in flight (the attempt
// timed out; the broker answers that request late). The new client produces
// none of a's records before the old one is settled, so a's partition holds
// its events in order (the old record, acknowledged, counts as the delivery
// of a:0); object b, which the old client had nothing of, goes meanwhile.
// With two reloads in a row the third client waits for the first's record.
func TestKafkaHandOffSettlesInFlightRecords(t *testing.T) {
	t.Parallel()
	for _, reloads := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d reloads", reloads), func(t *testing.T) {
			t.Parallel()
			testKafkaHandOff(t, reloads)
		})
	}
}

func testKafkaHandOff(t *testing.T, reloads int) {
	c := newKfake(t, 0)
	brokers := c.ListenAddrs()
	var produces atomic.Int64
	release, woke := make(chan struct{}), make(chan struct{})
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if produces.Add(1) == 1 {
			// The old client's first produce request: the broker takes it
			// only once the test says so; other connections go on.
			c.SleepControl(func() { <-release })
			close(woke)
		}
		return nil, nil, false
	})
	spec := fmt.Sprintf(`kafka: {brokers: [%q], topic: ns-events, timeout: 1s}`, brokers[0])
	logs := make([]*logBuffer, reloads+1)
	// start builds the sender and queue of the action's i-th settings; what
	// runs the queue closes the sender once Run has returned, as the watcher's
	// action set does with a queue a reload replaced.
	start := func(i int, prev *Queue) *Queue {
		s, closer := buildKafkaAction(t, spec)
		logs[i] = &logBuffer{}
		q := NewQueue("bus", s, QueueOptions{Concurrency: 4, Retry: Retry{Max: 1000, Initial: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}, Logger: logs[i].logger()})
		if prev != nil {
			prev.HandOff(q)
		}
		runThenClose(t, q, closer)
		return q
	}
	defer func() {
		if t.Failed() {
			for i, l := range logs {
				if l != nil {
					t.Logf("queue %d:\n%s", i, l.String())
				}
			}
		}
	}()
	q := start(0, nil)
	q.Enqueue(cmDelivery("a", 0))
	for i := 1; i <= reloads; i++ {
		waitFor(t, "a:0's attempt to time out", 10*time.Second, func() bool { down, _ := q.Down(); return down })
		// The reload: a new client, the backlog handed over, the old queue
		// stops and its client is closed.
		q = start(i, q)
	}
	q.Enqueue(cmDelivery("a", 1))
	q.Enqueue(cmDelivery("b", 0))
	waitFor(t, "the new queue to deliver, or to wait on a:0", 20*time.Second, func() bool {
		st := q.Stats()
		return st.Delivered == 3 || st.Retries >= 1 && st.Delivered >= 1
	})
	if q.Stats().Delivered == 0 {
		t.Error("object b waited for the old client's record of object a")
	}
	close(release)
	waitFor(t, "every event to be delivered", 20*time.Second, func() bool { return q.Stats().Delivered == 3 })
	<-woke
	// The cluster handles the old request right after its control returns,
	// before this look-up, which it answers in turn.
	var total int
	for _, p := range c.PartitionInfos("ns-events") {
		total += int(p.HighWatermark)
	}
	var seqs []int
	for _, r := range consumeAll(t, brokers, "ns-events", total) {
		if name, seq := seqOf(t, r.Value); name == "a" {
			seqs = append(seqs, seq)
		}
	}
	if fmt.Sprint(seqs) != "[0 1]" {
		t.Errorf("object a's partition holds %v, want [0 1]", seqs)
	}
}

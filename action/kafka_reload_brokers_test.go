package action

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// holdProduces makes c take no produce request until the test ends: a
// cluster that has gone away with a request of the producer's on the wire.
func holdProduces(t *testing.T, c *kfake.Cluster) {
	gone := make(chan struct{})
	t.Cleanup(func() { close(gone) }) // before the cluster's Close, registered earlier
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() { <-gone })
		return nil, nil, false
	})
}

// A reload that points a kafka action at other brokers (the old cluster is
// gone: a fail-over) hands the backlog to a client of the new cluster. The
// old client's record of object a, on a cluster that no longer answers,
// never settles; a record of the new cluster cannot land beside it on one
// partition, so the new client has nothing to wait for: a's events (the
// one the old client held, retried, and the next) go to the new cluster, in
// order, as b's do.
func TestKafkaReloadToOtherBrokersDoesNotWaitForTheOldCluster(t *testing.T) {
	t.Parallel()
	old, next := newKfake(t, 0), newKfake(t, 0)
	holdProduces(t, old)
	retry := Retry{Max: 1000, Initial: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
	var logs [2]logBuffer
	defer func() {
		if t.Failed() {
			for i := range logs {
				t.Logf("queue %d:\n%s", i, logs[i].String())
			}
		}
	}()
	s0, c0 := buildKafkaAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: ns-events, timeout: 1s}`, old.ListenAddrs()[0]))
	q0 := NewQueue("bus", s0, QueueOptions{Concurrency: 4, Retry: retry, Logger: logs[0].logger()})
	runThenClose(t, q0, c0)
	q0.Enqueue(cmDelivery("a", 0))
	waitFor(t, "a:0's attempt to time out on the old cluster", 10*time.Second, func() bool { down, _ := q0.Down(); return down })

	brokers := next.ListenAddrs()
	s1, c1 := buildKafkaAction(t, fmt.Sprintf(`kafka: {brokers: [%q], topic: ns-events, timeout: 1s}`, brokers[0]))
	q1 := NewQueue("bus", s1, QueueOptions{Concurrency: 4, Retry: retry, Logger: logs[1].logger()})
	q0.HandOff(q1)
	runThenClose(t, q1, c1)
	q1.Enqueue(cmDelivery("a", 1))
	q1.Enqueue(cmDelivery("b", 0))
	waitFor(t, "the backlog delivered to the new cluster", 20*time.Second, func() bool { return q1.Stats().Delivered == 3 })
	var seqs []int
	for _, r := range consumeAll(t, brokers, "ns-events", 3) {
		if name, seq := seqOf(t, r.Value); name == "a" {
			seqs = append(seqs, seq)
		}
	}
	if fmt.Sprint(seqs) != "[0 1]" {
		t.Errorf("object a on the new cluster: %v, want [0 1]", seqs)
	}
}

// With state, an action a reload removed and the next adds again delivers
// its name's backlog read again from disk (watcher.takeBacklogLocked: the
// old queue halts, Follow, the pager pages the outbox in again); the new
// client inherits the old one's unacknowledged record. A group formed again
// from disk holds what is there now: the old client's group [a:0] was
// formed before a:1 came, the new queue forms [a:0 a:1] with the same first
// member. Its record is not the old one: a:1 must reach the partition, not
// be counted delivered on the old record's acknowledgement.
func TestKafkaReAddedGroupIsNotTheOldRecord(t *testing.T) {
	t.Parallel()
	c := newKfake(t, 0)
	brokers := c.ListenAddrs()
	release := make(chan struct{})
	var first = make(chan struct{}, 1)
	first <- struct{}{}
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		select {
		case <-first: // the old client's first request waits for the test
			c.SleepControl(func() { <-release })
		default:
		}
		return nil, nil, false
	})
	opts := func(l *logBuffer) QueueOptions {
		return QueueOptions{Concurrency: 4, Retry: Retry{Max: 1000, Initial: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond},
			Logger: l.logger(), Group: &GroupOptions{By: []string{"namespace"}, Wait: 50 * time.Millisecond, Interval: 50 * time.Millisecond, Max: 100}}
	}
	var logs [2]logBuffer
	defer func() {
		if t.Failed() {
			for i := range logs {
				t.Logf("queue %d:\n%s", i, logs[i].String())
			}
		}
	}()
	spec := fmt.Sprintf(`kafka: {brokers: [%q], topic: ns-events, timeout: 1s}`, brokers[0])
	s0, c0 := buildKafkaAction(t, spec)
	q0 := NewQueue("bus", s0, opts(&logs[0]))
	ctx0, remove := context.WithCancel(context.Background())
	stopped0 := make(chan struct{})
	go func() { _ = q0.Run(ctx0, 30*time.Second); _ = c0.Close(); close(stopped0) }()
	t.Cleanup(func() { q0.Halt(); remove(); <-stopped0 })
	q0.Enqueue(cmDelivery("a", 0))
	waitFor(t, "the group [a:0]'s attempt to time out", 10*time.Second, func() bool { down, _ := q0.Down(); return down })
	q0.Enqueue(cmDelivery("a", 1)) // after the group was formed

	remove() // a reload removes the action: its queue drains for its grace
	// The next reload adds it again: takeBacklogLocked's steps.
	s1, c1 := buildKafkaAction(t, spec)
	q1 := NewQueue("bus", s1, opts(&logs[1]))
	q0.Halt()
	q0.Follow(q1)
	<-q0.Stopped()
	for seq := range 2 { // the outbox, paged in again
		q1.Enqueue(cmDelivery("a", seq))
	}
	runThenClose(t, q1, c1)
	close(release)
	waitFor(t, "the re-added queue to deliver a:0 and a:1", 20*time.Second, func() bool { return q1.Stats().Delivered == 2 })

	var total int
	for _, p := range c.PartitionInfos("ns-events") {
		total += int(p.HighWatermark)
	}
	var seqs []int
	for _, r := range consumeAll(t, brokers, "ns-events", total) {
		var g struct{ Events []json.RawMessage }
		if err := json.Unmarshal(r.Value, &g); err != nil {
			t.Fatal(err)
		}
		for _, e := range g.Events {
			_, seq := seqOf(t, e)
			seqs = append(seqs, seq)
		}
	}
	seen := map[int]bool{}
	for _, s := range seqs {
		seen[s] = true
	}
	if !seen[0] || !seen[1] {
		t.Errorf("the partition's groups hold a's events %v; a:1 was counted delivered but never produced", seqs)
	}
}

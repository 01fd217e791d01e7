package action

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// The package's shared test helpers: deliveries, senders built through the
// config loader, and running a queue.

// delivery makes the delivery of event seq of object obj.
func delivery(obj string, seq int) *event.Delivery {
	pl := &event.Payload{
		ID:        fmt.Sprintf("uid-%s:%d:update", obj, seq),
		Type:      event.Update,
		Rule:      "r",
		Namespace: "ns",
		Name:      obj,
		Object:    json.RawMessage(fmt.Sprintf(`{"seq":%d}`, seq)),
	}
	b, _ := json.Marshal(pl)
	return &event.Delivery{Payload: pl, JSON: b, Key: "ns/" + obj}
}

// webhook builds a webhook sender from YAML, through the config loader.
func webhook(t *testing.T, spec string) *Webhook {
	t.Helper()
	a, _ := compileFirst(t, oneAction("hook", "webhook: "+spec))
	s, _, err := a.Build(Env{})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*Webhook)
}

// oneAction is a config whose one action, name, is of kindYAML (its kind's
// key and spec), with a rule that uses it.
func oneAction(name, kindYAML string) string {
	return `apiVersion: dynwatch/v1alpha1
actions:
  - name: ` + name + `
    ` + kindYAML + `
rules: [{name: r, resources: [{kind: ConfigMap}], actions: [` + name + `]}]
`
}

// compileFirst loads a config's text, as the config loader does, and
// compiles its first action; the file is returned for what else it holds
// (its ${VAR} values).
func compileFirst(t testing.TB, text string) (*Action, *config.File) {
	t.Helper()
	f, err := config.Parse("t.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	a, ferr := Compile(f.Config.Actions[0])
	if ferr != nil {
		t.Fatal(ferr)
	}
	return a, f
}

// runQueue runs q until the test ends.
func runQueue(t *testing.T, q *Queue) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		if err := q.Run(ctx, 5*time.Second); err != nil {
			t.Errorf("Run: %v", err)
		}
		close(done)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			q.Halt() // a fake clock nobody moves any more would hold the drain's grace for ever
		}
		cancel()
		<-done
	})
}

var waitFor = testenv.WaitFor

// logBuffer collects a queue's logs at debug level.
type logBuffer struct{ testenv.Buffer }

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// senderFunc is a Sender written as a function.
type senderFunc func(context.Context, *event.Delivery) error

func (f senderFunc) Send(ctx context.Context, d *event.Delivery) error { return f(ctx, d) }

// runFor runs q with the given grace period and returns what stops it: cancel
// starts the drain, and the returned channel says how long Run took after it,
// on q's clock.
func runFor(q *Queue, grace time.Duration) (cancel func(), took <-chan time.Duration) {
	ctx, stop := context.WithCancel(context.Background())
	var stopped atomic.Pointer[time.Time]
	out := make(chan time.Duration, 1)
	go func() {
		_ = q.Run(ctx, grace)
		out <- q.clock.Since(*stopped.Load())
	}()
	return func() { now := q.clock.Now(); stopped.Store(&now); stop() }, out
}

// testSource is the CloudEvents source the sink tests build their actions with.
const testSource = "https://api.test:6443"

// buildAction builds the sender of an action given as the YAML of its kind
// (`kafka: {...}`), through the config loader and the kind table, as a run
// would; what it holds is closed when the test ends.
func buildAction(t testing.TB, kindYAML string) Sender {
	t.Helper()
	return buildNamedAction(t, "sink", kindYAML, Env{Source: testSource, Logger: quiet})
}

// buildNamedAction is buildAction for the action name with env.
func buildNamedAction(t testing.TB, name, kindYAML string, env Env) Sender {
	t.Helper()
	a, _ := compileFirst(t, oneAction(name, kindYAML))
	s, closer, err := a.Build(env)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	if closer != nil {
		t.Cleanup(func() { _ = closer.Close() })
	}
	return s
}

// cmDelivery is update seq of ConfigMap ns/obj, as a rule delivers it.
func cmDelivery(obj string, seq int) *event.Delivery {
	pl := &event.Payload{
		ID:        fmt.Sprintf("uid-%s:%d:update", obj, seq),
		Time:      "2026-12-01T10:00:00.000Z",
		Type:      event.Update,
		Rule:      "r",
		Resource:  event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true},
		Namespace: "ns",
		Name:      obj,
		Changed:   []string{"data.seq"},
		Object:    json.RawMessage(fmt.Sprintf(`{"seq":%d}`, seq)),
	}
	b, _ := json.Marshal(pl)
	return &event.Delivery{Payload: pl, JSON: b, Key: "configmaps/ns/" + obj}
}

// seqOf reads the seq of a payload cmDelivery made.
func seqOf(t testing.TB, payloadJSON []byte) (string, int) {
	t.Helper()
	var pl struct {
		Name   string
		Object struct{ Seq int }
	}
	if err := json.Unmarshal(payloadJSON, &pl); err != nil {
		t.Fatalf("not a payload: %s", payloadJSON)
	}
	return pl.Name, pl.Object.Seq
}

// freePort returns a loopback port that nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// checkOrder reports an object whose seqs are not 0..n-1 in order, given
// what arrived (duplicates allowed only where dups is true).
func checkOrder(t testing.TB, got map[string][]int, objects []string, n int, dups bool) {
	t.Helper()
	for _, o := range objects {
		seqs := got[o]
		want := 0
		for _, s := range seqs {
			switch {
			case s == want:
				want++
			case dups && s == want-1:
			default:
				t.Errorf("object %s: got %v, want 0..%d in order", o, seqs, n-1)
				return
			}
		}
		if want != n {
			t.Errorf("object %s: got %v, want 0..%d", o, seqs, n-1)
		}
	}
}

// newFakeClock returns a fake clock for a queue's options.
func newFakeClock() *clocktesting.FakeClock {
	return clocktesting.NewFakeClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
}

// settled reports whether nothing in q can happen before its clock moves: no
// attempt is in flight or may start now, and no backoff is over.
func (q *Queue) settled() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stop || q.closed {
		return true
	}
	if len(q.pending)-len(q.ready)-len(q.backoffs)-q.blockedKeys() > 0 {
		return false // an attempt in flight, or a key between two states
	}
	now := q.clock.Now()
	for _, at := range q.backoffs {
		if !at.After(now) {
			return false // the timer hands it back now
		}
	}
	if at, ok := q.grp.nextDue(now); ok && !at.After(now) {
		// The timer forms its deliveries now; a timer set from a reading
		// taken just before the clock moved waits longer: wake it.
		q.rearmTimer()
		return false
	}
	if q.limit != nil && len(q.ready) > 0 && !q.limit.wakeAt.After(now) {
		return false // a worker takes a token now
	}
	h := q.health
	return len(q.ready) == 0 || h.down && !h.probing && now.Before(h.nextProbe) || q.limit != nil && q.limit.wakeAt.After(now)
}

// tick is how far the fake clock moves when a settled queue waits for no
// time of its own (for a test's event, or a drain's grace period).
const tick = 10 * time.Millisecond

// moveClock moves fc by at most up to (never back): to q's next wake-up once
// q has settled, else not at all, and waits a moment of real time.
func moveClock(fc *clocktesting.FakeClock, q *Queue, upTo time.Time) {
	moveClockUnless(fc, q, upTo, nil)
}

// moveClockUnless is moveClock that leaves the clock where it is when done
// holds once q has settled: what a waiter waits for may have happened between
// its look and q settling (a delivery is recorded before its attempt ends),
// and moving on then would carry the clock past the moment it waited for.
func moveClockUnless(fc *clocktesting.FakeClock, q *Queue, upTo time.Time, done func() bool) {
	now := fc.Now()
	if q.settled() && now.Before(upTo) && (done == nil || !done()) {
		to := now.Add(tick)
		q.mu.Lock()
		if next, ok := q.nextWake(now); ok {
			to = next
		}
		q.mu.Unlock()
		if to.After(upTo) {
			to = upTo
		}
		fc.SetTime(to)
	}
	time.Sleep(50 * time.Microsecond)
}

// waitOnClock is waitFor on q's fake clock: it moves fc as q needs (to its
// next backoff or probe whenever nothing else can happen) until cond holds,
// and fails the test if that takes more than limit on fc (and then 5s more of
// real time for what needs no clock), or a minute.
func waitOnClock(t *testing.T, fc *clocktesting.FakeClock, q *Queue, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	end, deadline := fc.Now().Add(limit), time.Now().Add(time.Minute)
	for !cond() {
		if !fc.Now().Before(end) {
			for real := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
				if time.Now().After(real) {
					t.Fatalf("%s: not within %s (on the fake clock)", what, limit)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute of real time, at %s on the fake clock", what, limit-end.Sub(fc.Now()))
		}
		moveClockUnless(fc, q, end, cond)
	}
}

// sleepOnClock lets d pass on q's fake clock, q doing meanwhile what it would.
func sleepOnClock(t *testing.T, fc *clocktesting.FakeClock, q *Queue, d time.Duration) {
	t.Helper()
	end, deadline := fc.Now().Add(d), time.Now().Add(time.Minute)
	for fc.Now().Before(end) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not pass on the fake clock within a minute", d)
		}
		moveClock(fc, q, end)
	}
}

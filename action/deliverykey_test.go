package action

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dynwatch/dynwatch/event"
)

// The delivery key's whole contract, on seeded random runs: whatever the
// grouping (by, wait, interval, max splits), failures (refused, or
// acknowledged too late after the receiver had the delivery), kills (done
// marks not yet on disk, the backlog read again by the next start, under
// the same or another group config) and reloads (the backlog handed to new
// settings), no key of any sink names two contents, and one action sends
// one content under one key only (a retry keeps its key). The keys are read
// where each sink puts them: a real webhook receiver (X-Dynwatch-Delivery-Id
// and the CloudEvents id), the Kafka record's dynwatch-delivery-id header
// and JetStream's Nats-Msg-Id (whose stream deduplicates across actions, so
// the action is part of its content). Replay one run with
// -run 'TestDeliveryKeyNamesOneContent/seed=N$'.
func TestDeliveryKeyNamesOneContent(t *testing.T) {
	t.Parallel()
	log := newKeyLog()
	rc := newKeyReceiver(t, log)
	sinks := map[string]*keySink{}
	for _, name := range []string{"a", "b"} {
		sinks[name] = newKeySink(t, name, rc.srv.URL, log)
	}
	for seed := range 64 {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			s := newKeySim(t, uint64(seed), sinks)
			s.run(60)
			s.finish()
		})
	}
	for _, e := range log.problems() {
		t.Error(e)
	}
	if log.reformed == 0 {
		t.Error("no run formed a group again with other members under one first event: the runs test nothing of re-formed groups")
	}
	t.Logf("%d times a group was formed again with other members under one first event", log.reformed)
}

// keyLog is every key each sink sent and the content it named.
type keyLog struct {
	mu      sync.Mutex
	run     string            // the run under way, for messages
	content map[string]string // sink + " " + key → content
	key     map[string]string // sink + " " + action + " " + content → key
	bad     []string
	// starts holds, by a group's first event's key, the webhook keys of the
	// groups that started there; reformed counts those formed again with
	// other members.
	starts   map[string]map[string]bool
	reformed int
}

func newKeyLog() *keyLog {
	return &keyLog{content: map[string]string{}, key: map[string]string{}, starts: map[string]map[string]bool{}}
}

// note records that action's sink sent content under key. A key that names
// a broker's whole store (JetStream's) names the action's content.
func (l *keyLog) note(sink, action, key, content string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	where := l.run
	named := content
	if sink == "nats" {
		named = action + " " + content
	}
	if was, ok := l.content[sink+" "+key]; ok && was != named {
		l.bad = append(l.bad, fmt.Sprintf("%s: %s key %q names two contents: %s, then %s", where, sink, key, summary(was), summary(named)))
	}
	l.content[sink+" "+key] = named
	ck := sink + " " + action + " " + content
	if was, ok := l.key[ck]; ok && was != key {
		l.bad = append(l.bad, fmt.Sprintf("%s: action %s sent one content under two %s keys, %q and %q: %s", where, action, sink, was, key, summary(content)))
	}
	l.key[ck] = key
	if first, _, grouped := strings.Cut(key, ":group:"); grouped && sink == "webhook" {
		if l.starts[first] == nil {
			l.starts[first] = map[string]bool{}
		}
		if !l.starts[first][key] && len(l.starts[first]) > 0 {
			l.reformed++
		}
		l.starts[first][key] = true
	}
}

func (l *keyLog) problem(format string, args ...any) {
	l.mu.Lock()
	l.bad = append(l.bad, l.run+": "+fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

// setRun starts the log of another run: another cluster, whose events
// have other contents under the same ids.
func (l *keyLog) setRun(run string) {
	l.mu.Lock()
	l.run, l.content, l.key, l.starts = run, map[string]string{}, map[string]string{}, map[string]map[string]bool{}
	l.mu.Unlock()
}

func (l *keyLog) problems() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.bad)
}

// contentOf is what a payload or group payload carries: its events, in
// order (a group's labels are how it was grouped, not what it carries).
func contentOf(b []byte) string {
	var g struct {
		Count  *int
		Events json.RawMessage
	}
	_ = json.Unmarshal(b, &g)
	var out bytes.Buffer
	if g.Count != nil {
		out.WriteString("group ")
		b = g.Events
	}
	_ = json.Compact(&out, b)
	return out.String()
}

// summary names what a content holds: its events' <id>:<rule>.
func summary(content string) string {
	at := strings.IndexAny(content, "[{")
	if at < 0 {
		return content
	}
	prefix, body := content[:at], content[at:]
	var ps []event.Payload
	if err := json.Unmarshal([]byte(body), &ps); err != nil {
		var p event.Payload
		_ = json.Unmarshal([]byte(body), &p)
		ps = []event.Payload{p}
	}
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.ID + ":" + p.Rule
	}
	return prefix + "[" + strings.Join(ids, " ") + "]"
}

// keyReceiver is a webhook receiver of structured CloudEvents.
type keyReceiver struct{ srv *httptest.Server }

func newKeyReceiver(t *testing.T, log *keyLog) *keyReceiver {
	rc := &keyReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var ce struct {
			ID   string
			Data json.RawMessage
		}
		if err := json.Unmarshal(b, &ce); err != nil {
			log.problem("not a CloudEvent: %s", b)
			return
		}
		key, action := r.Header.Get("X-Dynwatch-Delivery-Id"), r.Header.Get("X-Sim-Action")
		if ce.ID != key {
			log.problem("CloudEvents id %q, X-Dynwatch-Delivery-Id %q", ce.ID, key)
		}
		log.note("webhook", action, key, contentOf(ce.Data))
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// keySink is one action's sender: it reads the keys the action's Kafka and
// NATS senders would send d under, then sends d through a real webhook. It
// fails attempts as told: refused before the webhook is reached, or late
// (the receiver has the delivery, the acknowledgement is lost).
type keySink struct {
	action string
	hook   Sender
	kafka  *Kafka
	nats   *NATS
	log    *keyLog

	mu        sync.Mutex
	fail      int
	late      bool
	keys      map[*event.Delivery]string // the keys of each delivery attempted
	delivered map[string]bool            // the members' own keys, once the webhook took them
}

func newKeySink(t *testing.T, action, url string, log *keyLog) *keySink {
	hook := buildNamedAction(t, action, fmt.Sprintf(`webhook: {url: %q, format: cloudevents, headers: {X-Sim-Action: %s}}`, url, action), Env{Source: testSource, Logger: quiet})
	kafka := buildNamedAction(t, action, fmt.Sprintf(`kafka: {brokers: ["127.0.0.1:%d"], topic: events}`, freePort(t)), Env{Source: testSource, Logger: quiet})
	nats := buildNamedAction(t, action, fmt.Sprintf(`nats: {url: "nats://127.0.0.1:%d", subject: "dw.%s"}`, freePort(t), action), Env{Source: testSource, Logger: quiet})
	return &keySink{action: action, hook: hook, kafka: kafka.(*Kafka), nats: nats.(*NATS), log: log, keys: map[*event.Delivery]string{}, delivered: map[string]bool{}}
}

func (s *keySink) Send(ctx context.Context, d *event.Delivery) error {
	rec, err := s.kafka.record(d)
	if err != nil {
		return err
	}
	msg, err := s.nats.message(d)
	if err != nil {
		return err
	}
	kafkaKey, natsKey := header(rec, "dynwatch-delivery-id"), s.nats.msgID(d)
	s.mu.Lock()
	keys := kafkaKey + " " + natsKey
	if was, ok := s.keys[d]; ok && was != keys {
		s.log.problem("action %s retried a delivery under other keys: %s, then %s", s.action, was, keys)
	}
	s.keys[d] = keys
	refuse, late := s.fail > 0 && !s.late, s.fail > 0 && s.late
	if s.fail > 0 {
		s.fail--
	}
	s.mu.Unlock()
	s.log.note("kafka", s.action, kafkaKey, contentOf(rec.Value))
	s.log.note("nats", s.action, natsKey, contentOf(msg.Data))
	if refuse {
		return errors.New("503 service unavailable")
	}
	if err := s.hook.Send(ctx, d); err != nil {
		return err
	}
	s.mu.Lock()
	for _, m := range membersOf(d) {
		s.delivered[DeliveryKey(m.Payload)] = true
	}
	s.mu.Unlock()
	if late {
		return errors.New("timeout awaiting response headers")
	}
	return nil
}

func membersOf(d *event.Delivery) []*event.Delivery {
	if d.Group != nil {
		return d.Members
	}
	return []*event.Delivery{d}
}

// keySim is one seeded run: two actions, each on its own fake clock (moved
// alike), four ConfigMaps in two namespaces, two rules.
type keySim struct {
	t     *testing.T
	rng   *rand.Rand
	where string
	acts  []*simAction
	seqs  map[string]int // by object: its next event's seq
	now   time.Time      // what the clocks read, for the events' times
}

// simAction is one action across the processes of a run: its queue of the
// moment, its settings, and its outbox: every delivery accepted, and which
// are marked done.
type simAction struct {
	name  string
	sink  *keySink
	fc    *clocktesting.FakeClock
	q     *Queue
	group *GroupOptions
	stops []func()

	mu    sync.Mutex
	all   []*event.Delivery // in the order accepted
	done  map[string]bool
	order []string // the keys marked done, latest last
}

func newKeySim(t *testing.T, seed uint64, sinks map[string]*keySink) *keySim {
	s := &keySim{t: t, rng: rand.New(rand.NewPCG(seed, 38)), where: fmt.Sprint("seed=", seed), seqs: map[string]int{}}
	s.now = newFakeClock().Now()
	for _, name := range []string{"a", "b"} {
		sk := sinks[name]
		sk.mu.Lock()
		sk.fail, sk.keys, sk.delivered = 0, map[*event.Delivery]string{}, map[string]bool{}
		sk.log.setRun(s.where)
		sk.mu.Unlock()
		a := &simAction{name: name, sink: sk, fc: clocktesting.NewFakeClock(s.now), done: map[string]bool{}}
		a.start(t, s.groupOptions(), s.rng.IntN(3)+1)
		s.acts = append(s.acts, a)
	}
	t.Cleanup(func() {
		for _, a := range s.acts {
			a.stop()
		}
	})
	return s
}

// groupOptions are random group settings, or nil (no grouping).
func (s *keySim) groupOptions() *GroupOptions {
	if s.rng.IntN(4) == 0 {
		return nil
	}
	var by []string
	for _, l := range []string{"namespace", "rule", "name", "type"} {
		if s.rng.IntN(3) == 0 {
			by = append(by, l)
		}
	}
	pick := func(ds ...time.Duration) time.Duration { return ds[s.rng.IntN(len(ds))] }
	return &GroupOptions{
		By:       by,
		Wait:     pick(500*time.Millisecond, 5*time.Second, 30*time.Second),
		Interval: pick(time.Second, 10*time.Second, time.Minute),
		Max:      []int{1, 2, 3, 5, 100}[s.rng.IntN(5)],
	}
}

// newQueue is a queue of the action with settings g.
func (a *simAction) newQueue(g *GroupOptions, concurrency int) *Queue {
	a.group = g
	return NewQueue(a.name, a.sink, QueueOptions{
		Clock: a.fc, Logger: quiet, Group: g, Concurrency: concurrency,
		Retry:  Retry{Max: 1000, Initial: time.Second, MaxBackoff: 10 * time.Second},
		Outbox: OutboxFunc(a.markDone),
	})
}

// start runs a new queue of the action as its current one.
func (a *simAction) start(t *testing.T, g *GroupOptions, concurrency int) {
	a.q = a.newQueue(g, concurrency)
	a.run(t, a.q)
}

func (a *simAction) run(t *testing.T, q *Queue) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		if err := q.Run(ctx, time.Second); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	a.stops = append(a.stops, func() { q.Halt(); cancel(); <-q.Stopped() })
}

func (a *simAction) stop() {
	for _, stop := range a.stops {
		stop()
	}
	a.stops = nil
}

func (a *simAction) markDone(d *event.Delivery) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := DeliveryKey(d.Payload)
	a.done[k] = true
	a.order = append(a.order, k)
}

// pending is what the outbox holds, in order.
func (a *simAction) pending() []*event.Delivery {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []*event.Delivery
	for _, d := range a.all {
		if !a.done[DeliveryKey(d.Payload)] {
			out = append(out, d)
		}
	}
	return out
}

// run takes n random steps.
func (s *keySim) run(n int) {
	for range n {
		switch r := s.rng.IntN(100); {
		case r < 50:
			s.event()
		case r < 70:
			s.advance([]time.Duration{100 * time.Millisecond, 2 * time.Second, 20 * time.Second, 2 * time.Minute}[s.rng.IntN(4)])
		case r < 82:
			sk := s.acts[s.rng.IntN(2)].sink
			sk.mu.Lock()
			sk.fail, sk.late = s.rng.IntN(4)+1, s.rng.IntN(2) == 0
			sk.mu.Unlock()
		case r < 91:
			s.kill(s.acts[s.rng.IntN(2)])
		default:
			s.reload(s.acts[s.rng.IntN(2)])
		}
	}
}

// event makes the next event of a random object, which rule r1 and maybe
// r2 deliver to both actions.
func (s *keySim) event() {
	obj := []string{"a/x", "a/y", "b/x", "b/z"}[s.rng.IntN(4)]
	ns, name, _ := strings.Cut(obj, "/")
	seq := s.seqs[obj]
	s.seqs[obj]++
	typ := event.Update
	if seq == 0 {
		typ = event.Add
	}
	rules := []string{"r1"}
	if s.rng.IntN(2) == 0 {
		rules = append(rules, "r2")
	}
	for _, rule := range rules {
		d := gdelivery(ns, name, seq, typ, s.now)
		d.Payload.Rule = rule
		d.JSON, _ = json.Marshal(d.Payload)
		for _, a := range s.acts {
			c := cloneDelivery(d)
			a.mu.Lock()
			a.all = append(a.all, c)
			a.mu.Unlock()
			a.q.Enqueue(c)
		}
	}
}

// cloneDelivery is d as read back from disk: the same bytes, another value.
func cloneDelivery(d *event.Delivery) *event.Delivery {
	p := *d.Payload
	return &event.Delivery{Payload: &p, JSON: slices.Clone(d.JSON), Key: d.Key, Seq: d.Seq}
}

// advance lets d pass on every action's clock.
func (s *keySim) advance(d time.Duration) {
	s.now = s.now.Add(d)
	for _, a := range s.acts {
		a.clockUntil(s.t, func() bool { return !a.fc.Now().Before(s.now) }, s.now)
	}
}

// clockUntil moves a's clock, never past end, until cond holds: whenever
// its queue has settled, to its next wake-up (a backoff, a probe, a group
// due) or, with none before it, to end.
func (a *simAction) clockUntil(t *testing.T, cond func() bool, end time.Time) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for i := 1; !cond(); i++ {
		if time.Now().After(deadline) {
			t.Fatalf("action %s: stuck at %s on its clock: %s", a.name, a.fc.Now(), a.q.describe())
		}
		if i%64 == 0 {
			// A fake clock set between the queue's timer reading the time and
			// arming its timer puts the timer's target later than the wake-up
			// (a real clock goes on and fires it): have the timer look again.
			a.q.rearmTimer()
		}
		if now := a.fc.Now(); a.q.settled() && now.Before(end) {
			to := end
			a.q.mu.Lock()
			if next, ok := a.q.nextWake(now); ok && next.Before(end) {
				to = next
			}
			a.q.mu.Unlock()
			a.fc.SetTime(to)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// kill stops a's process as kill -9 does, its last few done marks not yet
// on disk, and starts the next with what the outbox holds, under the same
// group settings or others.
func (s *keySim) kill(a *simAction) {
	a.stop()
	a.mu.Lock()
	lost := min(s.rng.IntN(4), len(a.order))
	for _, k := range a.order[len(a.order)-lost:] {
		delete(a.done, k)
	}
	a.order = a.order[:len(a.order)-lost]
	a.mu.Unlock()
	g := a.group
	if s.rng.IntN(2) == 0 {
		g = s.groupOptions()
	}
	a.start(s.t, g, s.rng.IntN(3)+1)
	for _, d := range a.pending() {
		a.q.Enqueue(cloneDelivery(d))
	}
}

// reload changes a's settings: its backlog moves to a queue with new
// group settings, in order.
func (s *keySim) reload(a *simAction) {
	old, next := a.q, a.newQueue(s.groupOptions(), s.rng.IntN(3)+1)
	old.HandOff(next)
	a.q = next
	a.run(s.t, next)
}

// finish lets every failure pass and the clocks run until every delivery
// is done, and checks that every event reached the receiver.
func (s *keySim) finish() {
	for _, a := range s.acts {
		a.sink.mu.Lock()
		a.sink.fail = 0
		a.sink.mu.Unlock()
		a.clockUntil(s.t, func() bool { return len(a.pending()) == 0 }, s.now.Add(24*time.Hour))
		a.sink.mu.Lock()
		for _, d := range a.all {
			if k := DeliveryKey(d.Payload); !a.sink.delivered[k] {
				s.t.Errorf("action %s: %s never delivered", a.name, k)
			}
		}
		a.sink.mu.Unlock()
	}
}

// describe says what q holds, for a run that is stuck.
func (q *Queue) describe() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "stop %v closed %v total %d ready %q backoffs %v health %+v blocked %d", q.stop, q.closed, q.total, q.ready, q.backoffs, q.health, q.blockedKeys())
	for key, list := range q.pending {
		fmt.Fprintf(&b, "\n  pending %q: %d items", key, len(list))
		if it := list[0]; it.u != nil {
			fmt.Fprintf(&b, ", the head waits for %d, done %v, %d events", it.u.deps, it.u.done, it.count())
		}
	}
	if q.grp != nil {
		fmt.Fprintf(&b, "\n  groups: %d waiting, %d open", q.grp.waiting, len(q.grp.groups))
		for _, gr := range q.grp.due {
			fmt.Fprintf(&b, "\n  group %q: %d members, due %s, held %v, resume %s", gr.key, len(gr.members), gr.due, gr.held, gr.resume)
		}
	}
	return b.String()
}

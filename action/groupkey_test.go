package action

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// wantGroupKey is a group's key as docs/noise.md spells it, computed here on
// its own: the first member's <id>:<rule>, ":group:", the member count, ":",
// and the first 12 hex digits of the SHA-256 of every member's key, in
// order, joined by newlines.
func wantGroupKey(members ...*event.Delivery) string {
	keys := make([]string, len(members))
	for i, m := range members {
		keys[i] = m.Payload.ID + ":" + m.Payload.Rule
	}
	sum := sha256.Sum256([]byte(strings.Join(keys, "\n")))
	return fmt.Sprintf("%s:group:%d:%s", keys[0], len(members), hex.EncodeToString(sum[:])[:12])
}

// A grouped delivery's key names its members: a group made again of the
// same members has the same key, one with another member, one fewer or the
// same ones in another order has another; each member keeps its own key.
func TestGroupKeyNamesItsMembers(t *testing.T) {
	t.Parallel()
	now := newFakeClock().Now()
	e1 := gdelivery("a", "x", 0, event.Add, now)
	e2 := gdelivery("a", "y", 0, event.Add, now)
	e3 := gdelivery("a", "z", 0, event.Add, now)
	labels := map[string]string{"namespace": "a"}
	group := func(ms ...*event.Delivery) string {
		t.Helper()
		g, err := event.NewGroupDelivery(labels, ms)
		if err != nil {
			t.Fatal(err)
		}
		return DeliveryID(g)
	}
	cases := []struct {
		name    string
		members []*event.Delivery
	}{
		{"two", []*event.Delivery{e1, e2}},
		{"re-formed with one more", []*event.Delivery{e1, e2, e3}},
		{"another second member", []*event.Delivery{e1, e3}},
		{"the last two swapped", []*event.Delivery{e1, e3, e2}},
		{"one", []*event.Delivery{e1}},
	}
	seen := map[string]string{}
	for _, c := range cases {
		got := group(c.members...)
		if want := wantGroupKey(c.members...); got != want {
			t.Errorf("%s: key %q, want %q", c.name, got, want)
		}
		if again := group(slices.Clone(c.members)...); again != got {
			t.Errorf("%s: the same members made again have key %q, then %q", c.name, got, again)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("%s and %s share the key %q", other, c.name, got)
		}
		seen[got] = c.name
	}
	if got, want := DeliveryID(e3), e3.Payload.ID+":r"; got != want {
		t.Errorf("a member's own key %q, want %q", got, want)
	}
}

// dedupReceiver is a webhook receiver that handles each
// X-Dynwatch-Delivery-Id once, as a receiver that drops duplicates does: a
// key it has seen is not handled again. While slow is set it answers
// nothing until the sender gives up (a late acknowledgement), whether it
// handled the delivery or not.
type dedupReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	slow    bool
	seen    map[string]bool
	tries   []string // the key of every request, in order
	handled []string // the events handled, each as ns/name:seq
}

func newDedupReceiver(t *testing.T) *dedupReceiver {
	t.Helper()
	rc := &dedupReceiver{seen: map[string]bool{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var g event.GroupPayload
		if err := json.Unmarshal(b, &g); err != nil || g.Count != len(g.Events) || g.Count == 0 {
			t.Errorf("not a grouped delivery: %s", b)
		}
		key := r.Header.Get("X-Dynwatch-Delivery-Id")
		rc.mu.Lock()
		rc.tries = append(rc.tries, key)
		slow, dup := rc.slow, rc.seen[key]
		if !dup {
			rc.seen[key] = true
			for _, p := range g.Events {
				var o struct{ Seq int }
				_ = json.Unmarshal(p.Object, &o)
				rc.handled = append(rc.handled, fmt.Sprintf("%s/%s:%d", p.Namespace, p.Name, o.Seq))
			}
		}
		rc.mu.Unlock()
		if slow {
			<-r.Context().Done() // the sender timed out
		}
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *dedupReceiver) setSlow(slow bool) { rc.mu.Lock(); rc.slow = slow; rc.mu.Unlock() }

func (rc *dedupReceiver) got() (tries, handled []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.tries), slices.Clone(rc.handled)
}

// process is one dynwatch process's grouped webhook queue, its outbox kept
// by the test: what it has not marked done is what the state file would
// hand the next start.
type process struct {
	q      *Queue
	cancel context.CancelFunc
	mu     sync.Mutex
	done   []*event.Delivery
}

// startProcess starts a process whose outbox holds backlog: the queue
// takes it before it runs, as a start pages its backlog in.
func startProcess(t *testing.T, url string, backlog ...*event.Delivery) *process {
	t.Helper()
	p := &process{}
	hook := buildAction(t, fmt.Sprintf(`webhook: {url: %q, timeout: 300ms}`, url))
	p.q = NewQueue("hook", hook, QueueOptions{
		Logger: quiet,
		Group:  &GroupOptions{By: []string{"namespace"}, Wait: 50 * time.Millisecond, Interval: time.Hour, Max: 100},
		Retry:  Retry{Max: 1000, Initial: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond},
		Outbox: OutboxFunc(func(d *event.Delivery) { p.mu.Lock(); p.done = append(p.done, d); p.mu.Unlock() }),
	})
	for _, d := range backlog {
		p.q.Enqueue(d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() { _ = p.q.Run(ctx, time.Second) }()
	t.Cleanup(func() { p.q.Halt(); cancel(); <-p.q.Stopped() })
	return p
}

// kill stops p as kill -9 would: nothing more is sent or marked done.
func (p *process) kill(t *testing.T) {
	t.Helper()
	p.q.Halt()
	p.cancel()
	select {
	case <-p.q.Stopped():
	case <-time.After(10 * time.Second):
		t.Fatal("the queue did not stop")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.done) != 0 {
		t.Fatalf("%d events marked done before the kill", len(p.done))
	}
}

// A group [cm0 cm1] whose acknowledgement comes too late, twice, is sent
// again with its key: the receiver that drops duplicates handles it once. A
// kill -9 before any done mark lands; the next start forms the same members
// again, under the same key. Another kill; cm2 was created meanwhile, and
// the start after forms [cm0 cm1 cm2]: another content, so another key, and
// the receiver handles cm2 (with cm0 and cm1 again: at least once).
func TestGroupReformedReachesDedupingReceiver(t *testing.T) {
	t.Parallel()
	rc := newDedupReceiver(t)
	rc.setSlow(true)
	now := time.Now()
	cm0 := gdelivery("a", "cm0", 0, event.Add, now)
	cm1 := gdelivery("a", "cm1", 0, event.Add, now)
	cm2 := gdelivery("a", "cm2", 0, event.Add, now.Add(time.Second))

	first := startProcess(t, rc.srv.URL, cm0, cm1)
	waitFor(t, "two late attempts", 20*time.Second, func() bool { tries, _ := rc.got(); return len(tries) >= 2 })
	first.kill(t)
	tries, handled := rc.got()
	if tries[0] != tries[1] {
		t.Errorf("the retry of [cm0 cm1] has key %q, its first attempt %q: a retry keeps its key", tries[1], tries[0])
	}
	if want := []string{"a/cm0:0", "a/cm1:0"}; !slices.Equal(handled, want) {
		t.Errorf("handled %v, want %v once", handled, want)
	}

	second := startProcess(t, rc.srv.URL, cm0, cm1) // what the outbox holds
	before := len(tries)
	waitFor(t, "the re-formed group", 20*time.Second, func() bool { tries, _ := rc.got(); return len(tries) > before })
	second.kill(t)
	if tries, _ = rc.got(); tries[before] != tries[0] {
		t.Errorf("[cm0 cm1] formed again after a restart has key %q, before %q", tries[before], tries[0])
	}

	rc.setSlow(false)
	third := startProcess(t, rc.srv.URL, cm0, cm1, cm2)
	waitFor(t, "the group of three delivered", 20*time.Second, func() bool { return third.q.Stats().Delivered == 3 })
	tries, handled = rc.got()
	if !slices.Contains(handled, "a/cm2:0") {
		t.Fatalf("the receiver never handled cm2: handled %v; keys of the attempts %q", handled, tries)
	}
	if last := tries[len(tries)-1]; last != wantGroupKey(cm0, cm1, cm2) {
		t.Errorf("key of [cm0 cm1 cm2] %q, want %q", last, wantGroupKey(cm0, cm1, cm2))
	}
}

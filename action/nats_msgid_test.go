package action

import (
	"context"
	"fmt"
	"testing"

	"github.com/dynwatch/dynwatch/event"
)

// Two JetStream actions of one rule publish one event on two subjects that
// one stream captures (dw.>): the stream deduplicates on Nats-Msg-Id across
// everything it holds, so the key names the action, and both messages are
// stored. Each action's retry is still dropped as a duplicate.
func TestJetStreamTwoActionsOneStream(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	ns.stream(t)
	d := cmDelivery("cm0", 0)
	g := groupOf(t, 2, 1)
	for _, name := range []string{"a", "b"} {
		s := buildNamedAction(t, name, fmt.Sprintf(`nats: {url: %q, subject: dw.%s.events}`, ns.url(), name), Env{Source: testSource, Logger: quiet})
		for _, dl := range []*event.Delivery{d, g, d, g} { // each sent twice: a retry
			if err := s.Send(context.Background(), dl); err != nil {
				t.Fatalf("action %s: %v", name, err)
			}
		}
	}
	want := map[string]bool{}
	for _, name := range []string{"a", "b"} {
		want["dw."+name+".events "+d.Payload.ID+":r:"+name] = true
		want["dw."+name+".events "+wantGroupKey(g.Members...)+":"+name] = true
	}
	got := map[string]bool{}
	for _, m := range streamMsgs(t, ns) {
		k := m.Subject + " " + m.Header.Get("Nats-Msg-Id")
		if got[k] {
			t.Errorf("stored twice: %s", k)
		}
		got[k] = true
		if id := m.Header.Get("Dynwatch-Delivery-Id"); id != DeliveryID(d) && id != wantGroupKey(g.Members...) {
			t.Errorf("%s: Dynwatch-Delivery-Id %q, want the delivery's key without the action", k, id)
		}
	}
	for k := range want {
		if !got[k] {
			t.Errorf("the stream holds nothing for %s (it holds %v)", k, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the stream holds %v, want %v", got, want)
	}
}

package action

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// gate is a server's client authentication that refuses while closed, and
// counts the refusals.
type gate struct{ closed, refused atomic.Int64 }

func (g *gate) Check(server.ClientAuthentication) bool {
	if g.closed.Load() == 1 {
		g.refused.Add(1)
		return false
	}
	return true
}

// A server that refuses the client's login for a while after a restart (an
// auth callout down, accounts still loading) is a receiver that is down like
// any other: once it accepts the login again the action recovers, rather than
// give up on the connection for good after two identical refusals.
func TestNATSRecoversAfterAuthRefusals(t *testing.T) {
	t.Parallel()
	g := &gate{}
	ns := &natsServer{t: t, opts: &server.Options{
		Host: "127.0.0.1", Port: freePort(t), JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true, CustomClientAuthentication: g,
	}}
	ns.start()
	t.Cleanup(ns.stop)
	ns.stream(t)
	s := buildAction(t, fmt.Sprintf(`nats: {url: %q, subject: dw.events, timeout: 1s}`, ns.url()))
	if err := s.Send(context.Background(), cmDelivery("a", 0)); err != nil {
		t.Fatal(err)
	}
	ns.stop()
	g.closed.Store(1)
	ns.start()
	waitFor(t, "the server to refuse the client's login three times", 10*time.Second, func() bool { return g.refused.Load() >= 3 })
	if err := s.Send(context.Background(), cmDelivery("a", 1)); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		t.Errorf("a send while the login is refused: %v, want the refusal as its reason", err)
	}
	g.closed.Store(0)
	waitFor(t, "a send to succeed once the login is accepted again", 10*time.Second, func() bool {
		return s.Send(context.Background(), cmDelivery("a", 1)) == nil
	})
}

package action

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A publisher whose NATS user may publish its subjects but not ask
// JetStream about the stream (a common least-privilege grant: no
// $JS.API.STREAM.INFO) gets its messages stored at the publish's pace: the
// look at the stream's duplicate window, which the server silently refuses,
// does not hold the first delivery to each stream for the action's whole
// timeout once the stream has acknowledged it.
func TestJetStreamWindowCheckDoesNotHoldADelivery(t *testing.T) {
	t.Parallel()
	ns := &natsServer{t: t, opts: &server.Options{
		Host: "127.0.0.1", Port: freePort(t), JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true,
		Users: []*server.User{
			{Username: "admin", Password: "admin-pass"},
			{Username: "pub", Password: "pub-pass", Permissions: &server.Permissions{
				Publish:   &server.SubjectPermission{Allow: []string{"dw.>"}},
				Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>"}},
			}},
		},
	}}
	ns.start()
	t.Cleanup(ns.stop)
	nc, err := nats.Connect(ns.url(), nats.UserInfo("admin", "admin-pass"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "DW", Subjects: []string{"dw.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	const timeout = 3 * time.Second
	url := fmt.Sprintf("nats://pub:pub-pass@127.0.0.1:%d", ns.opts.Port)
	s := buildAction(t, fmt.Sprintf(`nats: {url: %q, subject: "dw.events", timeout: %s}`, url, timeout))
	for i := range 2 {
		start := time.Now()
		if err := s.Send(context.Background(), cmDelivery(fmt.Sprint("cm", i), 0)); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > timeout/2 {
			t.Errorf("delivery %d took %s (the timeout is %s): the stream had acknowledged it", i, took.Round(time.Millisecond), timeout)
		}
	}
	stream, err := js.Stream(context.Background(), "DW")
	if err != nil {
		t.Fatal(err)
	}
	if n := stream.CachedInfo().State.Msgs; n != 2 {
		t.Errorf("the stream holds %d messages, want 2", n)
	}
}

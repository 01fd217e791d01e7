package action

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
)

// natsReconnectWait is how long the client waits between attempts to reach a
// server again; the queue's probes meanwhile see the action down.
const natsReconnectWait = 250 * time.Millisecond

var errNATSDown = errors.New("not connected to a NATS server")

// NATS publishes each payload to a subject. With JetStream (the default) a
// publish counts only once the stream has acknowledged it, and its
// Nats-Msg-Id is the delivery key and the action's name (msgID), so the
// stream drops a retried duplicate, and only that: a stream that captures
// several actions' subjects keeps each action's message.
// Core NATS counts a message delivered once the server has it: at most once
// on the wire, nothing is kept for a subscriber that is not there.
type NATS struct {
	conn   *nats.Conn
	js     jetstream.JetStream // nil for core NATS
	action string
	natsMessages
	timeout time.Duration
	where   string
	windows *dupWindows // nil for core NATS
}

func compileNATS(spec *config.ActionSpec) (compiled, *FieldError) {
	ns := spec.NATS
	subject, err := compileText(ns.Subject)
	if err != nil {
		return compiled{}, &FieldError{Field: "nats.subject", Err: err}
	}
	name, maxBackoff := spec.Name, retryOf(spec.RetryPolicy()).MaxBackoff
	build := func(env Env) (Sender, io.Closer, error) {
		n, err := newNATS(ns, natsMessages{subject: subject, ce: ns.Format == config.FormatCloudEvents, source: env.source()})
		if err != nil {
			return nil, nil, err
		}
		n.action = name
		if n.js != nil {
			n.windows = newDupWindows(n.js, env.logger().With("action", name), maxBackoff)
		}
		return n, n, nil
	}
	return compiled{build, renderNATS(ns, name, natsMessages{subject: subject})}, nil
}

// newNATS connects to spec's servers. A server that cannot be reached is not
// an error: the client keeps trying in the background and sends fail meanwhile.
func newNATS(spec *config.NATSSpec, msgs natsMessages) (*NATS, error) {
	opts := []nats.Option{
		nats.Name("dynwatch"),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(natsReconnectWait),
		// A login refused twice alike (an auth callout down, a server still
		// loading its accounts) is an outage too: keep trying, never close
		// the connection for good.
		nats.IgnoreAuthErrorAbort(),
		// The client's asynchronous errors would go to stderr, past the logs
		// (a refused login every reconnectWait); a failed send says them.
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
		// Publishes while disconnected fail rather than wait in a buffer that a
		// crash would lose: the queue keeps them.
		nats.ReconnectBufSize(-1),
	}
	if spec.Token != "" {
		opts = append(opts, nats.Token(spec.Token))
	}
	if spec.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(spec.CredsFile))
	}
	if spec.TLS != nil {
		cfg, err := tlsConfig(spec.TLS)
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Secure(cfg))
	}
	conn, err := nats.Connect(spec.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("nats connect: %w", err)
	}
	n := &NATS{
		conn:         conn,
		natsMessages: msgs,
		timeout:      spec.Timeout.Std(),
		where:        natsWhere(spec.URL),
	}
	if spec.UsesJetStream() {
		if n.js, err = jetstream.New(conn); err != nil {
			conn.Close()
			return nil, fmt.Errorf("jetstream: %w", err)
		}
	}
	return n, nil
}

// natsWhere shows server URLs as logs may: scheme and host, no credentials.
func natsWhere(urls string) string {
	parts := strings.Split(urls, ",")
	for i, u := range parts {
		parts[i] = config.RedactURL(strings.TrimSpace(u))
	}
	return strings.Join(parts, ",")
}

// Send publishes d once and returns when the stream has acknowledged it (or,
// for core NATS, the server has it), or when that failed or timed out: both
// are retried, and the queue never has a second message of an object in flight.
func (n *NATS) Send(ctx context.Context, d *event.Delivery) error {
	msg, err := n.message(d)
	if err != nil {
		return &Failure{Err: err, Permanent: true}
	}
	if !n.conn.IsConnected() {
		if last := n.conn.LastError(); last != nil {
			return fmt.Errorf("nats %s: %w: %w", n.where, errNATSDown, last)
		}
		return fmt.Errorf("nats %s: %w", n.where, errNATSDown)
	}
	pubCtx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	if n.js == nil {
		if err := n.conn.PublishMsg(msg); err != nil {
			return natsFailure(fmt.Errorf("nats publish to %s: %w", msg.Subject, err))
		}
		if err := n.conn.FlushWithContext(pubCtx); err != nil {
			return fmt.Errorf("nats publish to %s: %w", msg.Subject, err)
		}
		return nil
	}
	ack, err := n.js.PublishMsg(pubCtx, msg, jetstream.WithMsgID(n.msgID(d)))
	if err != nil {
		return n.publishFailure(ctx, msg.Subject, err)
	}
	n.windows.check(ack.Stream, n.timeout)
	return nil
}

// msgID is d's Nats-Msg-Id: its delivery key and the action,
// <id>:<rule>:<action> (a group's key then the action). A stream
// deduplicates on it across every subject it captures, and two actions of
// one rule may publish one event into one stream: without the action, the
// second would be acknowledged as a duplicate and stored nowhere.
func (n *NATS) msgID(d *event.Delivery) string { return natsMsgID(d, n.action) }

// natsMsgID is the Nats-Msg-Id of d published by the action named action.
func natsMsgID(d *event.Delivery, action string) string { return DeliveryID(d) + ":" + action }

// natsFailure is err as a failed attempt: permanent when the message is
// larger than the server's max_payload or the stream's max_msg_size (it
// never fits, and the action is up), else the server's being down.
func natsFailure(err error) *Failure {
	var api *jetstream.APIError
	tooLarge := errors.Is(err, nats.ErrMaxPayload) ||
		errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum
	return &Failure{Err: err, Permanent: tooLarge}
}

// publishFailure is a failed JetStream publish to subject as a failed
// attempt. A subject that no stream captures (no responders, and JetStream
// says no stream has it) is the failure of the events a subject template
// sends there alone: each retries on its own schedule while the others go on.
// With a plain subject every event goes there: the action is down, its
// backlog kept; so is it when JetStream does not answer at all.
func (n *NATS) publishFailure(ctx context.Context, subject string, err error) *Failure {
	f := natsFailure(fmt.Errorf("jetstream publish to %s: %w", subject, err))
	if n.subject.tmpl == nil || !errors.Is(err, jetstream.ErrNoStreamResponse) {
		return f
	}
	if _, lerr := n.js.StreamNameBySubject(ctx, subject); errors.Is(lerr, jetstream.ErrStreamNotFound) {
		f.Err = fmt.Errorf("jetstream publish to %s: no stream captures the subject: %w", subject, err)
		f.OneEvent, f.Refused = true, true
	}
	return f
}

// natsMessages makes a delivery's message, what Send publishes and Render
// shows: its subject, headers and data.
type natsMessages struct {
	subject textOrTemplate
	ce      bool
	source  string
}

// message builds d's message: its subject, headers and data.
func (n natsMessages) message(d *event.Delivery) (*nats.Msg, error) {
	subject, err := n.subject.render(d)
	if err != nil {
		return nil, fmt.Errorf("render subject: %w", err)
	}
	if err := n.subject.check(subject, config.CheckNATSSubject); err != nil {
		return nil, fmt.Errorf("the subject template rendered no subject to publish to: %w", err)
	}
	msg := nats.NewMsg(subject)
	msg.Data = d.JSON
	msg.Header.Set("Dynwatch-Delivery-Id", DeliveryID(d))
	if n.ce {
		// The NATS binding maps datacontenttype to ce-datacontenttype like
		// any attribute; Content-Type stays for readers that look there.
		msg.Header.Set("Content-Type", "application/json")
		msg.Header.Set("ce-datacontenttype", "application/json")
		for _, a := range ceAttributes(d, n.source) {
			msg.Header.Set("ce-"+a.name, ceHeaderValue(a.value))
		}
	}
	return msg, nil
}

// Close closes the connection to the server.
func (n *NATS) Close() error {
	n.conn.Close()
	n.windows.wait() // a look at a stream's window ends with the connection
	return nil
}

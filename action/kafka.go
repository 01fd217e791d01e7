package action

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/payload"
)

// Kafka produces each payload as one record and counts it delivered only when
// the broker has acknowledged it (per acks). The client dials lazily: a broker
// that cannot be reached, at start or later, makes attempts fail (the action
// is down and probes), never the start itself.
type Kafka struct {
	client  *kgo.Client
	brokers []string // the seed brokers: a successor of other brokers inherits nothing
	kafkaRecords
	timeout time.Duration

	// recordCtx lives as long as the producer: a record outlives the attempt
	// that produced it. Close ends it.
	recordCtx context.Context
	stop      context.CancelFunc
	mu        sync.Mutex
	pending   map[string]*pending // by delivery key (DeliveryID: a group's names its members)
	// inflight is every record the client has not settled (acknowledged or
	// failed), by partition key: what a successor's records of the same
	// object wait for (kafka_handoff.go).
	inflight map[string][]*pending
	handover
}

// textOrTemplate is a config value that is either plain text or a template
// over the event, compiled once.
type textOrTemplate struct {
	text string
	tmpl *template.Template
}

// compileText compiles s as a template when it has an action in it.
func compileText(s string) (textOrTemplate, error) {
	if !strings.Contains(s, "{{") {
		return textOrTemplate{text: s}, nil
	}
	t, err := payload.ParseTemplate(s)
	return textOrTemplate{tmpl: t}, err
}

// render returns the text, or the template executed on d's payload (a
// grouped delivery's first event's).
func (t textOrTemplate) render(d *event.Delivery) (string, error) {
	if t.tmpl == nil {
		return t.text, nil
	}
	var buf bytes.Buffer
	if err := t.tmpl.Execute(&buf, payload.TemplateData(routeJSON(d))); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// check runs check on what a template rendered; plain text was checked once,
// when the config was loaded.
func (t textOrTemplate) check(rendered string, check func(string) error) error {
	if t.tmpl == nil {
		return nil
	}
	return check(rendered)
}

func compileKafka(spec *config.ActionSpec) (compiled, *FieldError) {
	ks := spec.Kafka
	topic, err := compileText(ks.Topic)
	if err != nil {
		return compiled{}, &FieldError{Field: "kafka.topic", Err: err}
	}
	var key *template.Template
	if ks.Key != config.KeyObject {
		if key, err = payload.ParseTemplate(ks.Key); err != nil {
			return compiled{}, &FieldError{Field: "kafka.key", Err: err}
		}
	}
	build := func(env Env) (Sender, io.Closer, error) {
		k, err := newKafka(ks, kafkaRecords{topic: topic, key: key, ce: ks.Format == config.FormatCloudEvents, source: env.source()})
		return k, k, err
	}
	return compiled{build, renderKafka(ks, kafkaRecords{topic: topic, key: key})}, nil
}

// newKafka builds a kafka producer from a validated spec; it does not dial.
func newKafka(spec *config.KafkaSpec, recs kafkaRecords) (*Kafka, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(spec.Brokers...),
		kgo.ProducerLinger(0),
		// Records go to the partition of their key's hash, so one object's
		// records share a partition and keep their order.
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		// A record for a topic that does not exist fails at the first
		// metadata that says so, not after four more (at 5s each once the
		// first record has failed: longer than an attempt's timeout, which
		// would make the action down): the queue retries that event on its
		// own schedule.
		kgo.UnknownTopicRetries(0),
	}
	if spec.Acks == "leader" {
		// Idempotent producing needs acks from all in-sync replicas.
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	} else {
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if spec.TLS != nil {
		cfg, err := tlsConfig(spec.TLS)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if spec.SASL != nil {
		opts = append(opts, kgo.SASL(saslMechanism(spec.SASL)))
	}
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Kafka{
		recordCtx:    ctx,
		stop:         stop,
		pending:      map[string]*pending{},
		inflight:     map[string][]*pending{},
		handover:     handover{release: make(chan struct{})},
		client:       client,
		brokers:      spec.Brokers,
		kafkaRecords: recs,
		timeout:      spec.Timeout.Std(),
	}, nil
}

func saslMechanism(s *config.SASLSpec) sasl.Mechanism {
	switch s.Mechanism {
	case "SCRAM-SHA-256":
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()
	}
	return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()
}

// tlsConfig is the TLS client of a sink: TLS 1.2 at least, a caFile's
// certificates as the only roots when given.
func tlsConfig(spec *config.TLSSpec) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: spec.InsecureSkipVerify}
	if spec.CAFile == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(spec.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read tls.caFile: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tls.caFile %s holds no PEM certificate", spec.CAFile)
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// Send produces d's record and returns once it is acknowledged, or with an
// error when it failed or was not acknowledged within the timeout (retried).
// A record that is not acknowledged yet stays with the client, which retries
// it on its own (deduplicated by idempotent producing): a retry of the same
// delivery waits for that record rather than producing a second one, so one
// object never has two records in flight and a broker that comes back gets
// each delivery once. A record of an object that a predecessor's client (a
// reload's) still has in flight waits for that one to settle first.
func (k *Kafka) Send(ctx context.Context, d *event.Delivery) error {
	timer := time.NewTimer(k.timeout)
	defer timer.Stop()
	var p *pending
	for {
		var earlier *pending
		var err error
		if p, earlier, err = k.produce(d); err != nil {
			return &Failure{Err: err, Permanent: true}
		}
		if earlier == nil {
			break
		}
		select {
		case <-earlier.done:
		case <-timer.C:
			return fmt.Errorf("kafka produce to %s: the previous client's record of this object is not settled within %s", earlier.topic, k.timeout)
		case <-ctx.Done():
			return fmt.Errorf("kafka produce to %s: %w", earlier.topic, ctx.Err())
		}
	}
	select {
	case <-p.done:
		k.forget(p)
		if p.err != nil {
			return k.failure(p)
		}
		return nil
	case <-timer.C:
		return fmt.Errorf("kafka produce to %s: not acknowledged within %s", p.topic, k.timeout)
	case <-ctx.Done():
		return fmt.Errorf("kafka produce to %s: %w", p.topic, ctx.Err())
	}
}

// failure is what a failed record makes of the attempt that sees it. A record
// too large never fits: that event fails for good, and the action is up. A
// topic the broker refuses (it does not exist, the user may not write to it,
// its name is refused) is the failure of the events a template sends there
// alone: each retries on its own schedule while the others go on. With a
// plain topic every event goes there: the action is down, its backlog kept.
func (k *Kafka) failure(p *pending) *Failure {
	err := fmt.Errorf("kafka produce to %s: %w", p.topic, p.err)
	switch {
	case errors.Is(p.err, kerr.MessageTooLarge):
		return &Failure{Err: err, Permanent: true}
	case k.topic.tmpl != nil && topicRefused(p.err):
		return &Failure{Err: err, OneEvent: true, Refused: true}
	}
	return &Failure{Err: err}
}

// topicRefused reports whether err is the broker's refusal of a record's
// topic, whatever the other topics.
func topicRefused(err error) bool {
	for _, e := range []*kerr.Error{kerr.TopicAuthorizationFailed, kerr.UnknownTopicOrPartition, kerr.UnknownTopicID, kerr.InvalidTopicException} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// pending is a record the client has and its outcome, once done is closed.
type pending struct {
	id    string
	topic string
	part  string // partitionKey of the record
	done  chan struct{}
	err   error
}

// produce hands d's record to the client and returns what tells its outcome,
// unless a record of d is pending already (its outcome, once there, not seen
// by an attempt yet): then that one. It hands nothing over, and returns the
// record to wait for, while a predecessor's client has a record of the same
// topic and key in flight: the broker would take the two in either order.
func (k *Kafka) produce(d *event.Delivery) (p, earlier *pending, err error) {
	id := DeliveryID(d) // a group's names its members: one formed again with others is another record
	k.mu.Lock()
	if kept, ok := k.pending[id]; ok {
		k.mu.Unlock()
		return kept, nil, nil
	}
	rec, err := k.record(d)
	if err != nil {
		k.mu.Unlock()
		return nil, nil, err
	}
	part := partitionKey(rec)
	if earlier := k.earlierRecordLocked(part); earlier != nil {
		k.mu.Unlock()
		return nil, earlier, nil
	}
	p = &pending{id: id, topic: rec.Topic, part: part, done: make(chan struct{})}
	k.pending[id] = p
	k.inflight[part] = append(k.inflight[part], p)
	k.mu.Unlock()
	// TryProduce, not Produce: a full buffer fails the attempt at once
	// instead of blocking the worker. The promise runs on the client's own
	// goroutine, or on this one before TryProduce returns, never under k.mu.
	k.client.TryProduce(k.recordCtx, rec, func(_ *kgo.Record, err error) {
		p.err = err
		k.settle(p)
		close(p.done)
	})
	return p, nil, nil
}

// forget drops p once an attempt has seen its outcome. Until then it stays,
// acknowledged or not: a retry after an attempt timed out just before the
// acknowledgement came finds it delivered, and produces no second record.
func (k *Kafka) forget(p *pending) {
	k.mu.Lock()
	if k.pending[p.id] == p {
		delete(k.pending, p.id)
	}
	k.mu.Unlock()
}

// Finished forgets d's record once the queue is done with d: delivered, or
// given up while the record was still unacknowledged (the client may still
// produce it, ahead of the object's later records on its partition).
func (k *Kafka) Finished(d *event.Delivery) {
	k.mu.Lock()
	delete(k.pending, DeliveryID(d))
	k.mu.Unlock()
}

// kafkaRecords makes a delivery's record, what Send produces and Render
// shows: its topic, key, headers and value.
type kafkaRecords struct {
	topic  textOrTemplate
	key    *template.Template // nil: the object's identity
	ce     bool               // format: cloudevents, binary mode
	source string
}

// record builds d's record: its topic, key, headers and value.
func (k kafkaRecords) record(d *event.Delivery) (*kgo.Record, error) {
	topic, err := k.topic.render(d)
	if err != nil {
		return nil, fmt.Errorf("render topic: %w", err)
	}
	if err := k.topic.check(topic, config.CheckKafkaTopic); err != nil {
		return nil, fmt.Errorf("the topic template rendered %w", err)
	}
	key := ObjectKey(d.Payload)
	if d.Group != nil {
		// One group's deliveries share a partition and keep their order.
		key = "group:" + groupLabelList(d.Group.Group)
	}
	if k.key != nil {
		var buf bytes.Buffer
		if err := k.key.Execute(&buf, payload.TemplateData(routeJSON(d))); err != nil {
			return nil, fmt.Errorf("render key: %w", err)
		}
		key = buf.String()
	}
	rec := &kgo.Record{Topic: topic, Key: []byte(key), Value: d.JSON}
	rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: "dynwatch-delivery-id", Value: []byte(DeliveryID(d))})
	if k.ce {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: "content-type", Value: []byte("application/json")})
		for _, a := range ceAttributes(d, k.source) {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: "ce_" + a.name, Value: []byte(a.value)})
		}
	}
	return rec, nil
}

// ObjectKey is an object's identity for ordering: group/resource/namespace/name.
func ObjectKey(p *event.Payload) string {
	return p.Resource.Group + "/" + p.Resource.Resource + "/" + p.Namespace + "/" + p.Name
}

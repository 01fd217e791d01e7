package config

import (
	"reflect"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// Every key a file leaves out holds its named default after loading.
func TestDefaultsAppearAfterLoad(t *testing.T) {
	t.Parallel()
	f, err := Parse("d.yaml", []byte(`apiVersion: dynwatch/v1alpha1
state: {path: /tmp/dynwatch-defaults-test}
server: {address: ":0"}
leaderElection: {namespace: ops}
actions:
  - {name: l, log: {}}
  - {name: w, webhook: {url: "http://127.0.0.1:9/x"}}
  - {name: ce, webhook: {url: "http://127.0.0.1:9/x", format: cloudevents}}
  - {name: x, exec: {command: [/bin/true]}}
  - {name: k, kafka: {brokers: ["127.0.0.1:9092"], topic: t}}
  - {name: n, nats: {url: "nats://127.0.0.1:4222", subject: s}}
rules: [{name: r, resources: [{kind: ConfigMap}], actions: [l]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	c := f.Config
	a := func(i int) *ActionSpec { return &c.Actions[i] }
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"shutdownGrace", c.ShutdownGrace.Std(), DefaultShutdownGrace},
		{"server.stallAfter", c.Server.StallAfter.Std(), DefaultStallAfter},
		{"leaderElection.name", c.LeaderElection.Name, DefaultLeaseName},
		{"leaderElection.leaseDuration", c.LeaderElection.LeaseDuration.Std(), DefaultLeaseDuration},
		{"leaderElection.renewDeadline", c.LeaderElection.RenewDeadline.Std(), DefaultRenewDeadline},
		{"leaderElection.retryPeriod", c.LeaderElection.RetryPeriod.Std(), DefaultRetryPeriod},
		{"redact", c.Redact[0].Kind, DefaultRedact()[0].Kind},
		{"queueSize", a(0).QueueSize, DefaultQueueSize},
		{"concurrency", a(0).Concurrency, DefaultConcurrency},
		{"log retry.max", *a(0).RetryPolicy().Max, DefaultMaxRetries},
		{"webhook.method", a(1).Webhook.Method, DefaultWebhookMethod},
		{"webhook.timeout", a(1).Webhook.Timeout.Std(), DefaultWebhookTimeout},
		{"webhook.format", a(1).Webhook.Format, DefaultFormat},
		{"webhook.retry.max", *a(1).Webhook.Retry.Max, DefaultMaxRetries},
		{"webhook.retry.initialBackoff", a(1).Webhook.Retry.InitialBackoff.Std(), DefaultInitialBackoff},
		{"webhook.retry.maxBackoff", a(1).Webhook.Retry.MaxBackoff.Std(), DefaultMaxBackoff},
		{"webhook.cloudevents only with format: cloudevents", a(1).Webhook.CloudEvents == nil, true},
		{"webhook.cloudevents.mode", a(2).Webhook.CloudEvents.Mode, DefaultCloudEventsMode},
		{"exec.timeout", a(3).Exec.Timeout.Std(), DefaultExecTimeout},
		{"exec.retry.max", *a(3).Exec.Retry.Max, DefaultMaxRetries},
		{"kafka.key", a(4).Kafka.Key, DefaultKafkaKey},
		{"kafka.format", a(4).Kafka.Format, DefaultFormat},
		{"kafka.acks", a(4).Kafka.Acks, DefaultKafkaAcks},
		{"kafka.timeout", a(4).Kafka.Timeout.Std(), DefaultKafkaTimeout},
		{"kafka.retry.maxBackoff", a(4).Kafka.Retry.MaxBackoff.Std(), DefaultMaxBackoff},
		{"nats.format", a(5).NATS.Format, DefaultFormat},
		{"nats.timeout", a(5).NATS.Timeout.Std(), DefaultNATSTimeout},
		{"nats.retry.initialBackoff", a(5).NATS.Retry.InitialBackoff.Std(), DefaultInitialBackoff},
		{"rule onStart, with state", c.Rules[0].OnStart, OnStartDiff},
		{"rule fire", c.Rules[0].Fire, DefaultFire},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// The defaults step fills in only what the file leaves out: a value the file
// gives stays, for the checks to judge.
func TestDefaultsKeepWhatTheFileSays(t *testing.T) {
	t.Parallel()
	f, err := Parse("d.yaml", []byte(`apiVersion: dynwatch/v1alpha1
shutdownGrace: 1s
actions:
  - name: w
    queueSize: 7
    concurrency: 2
    webhook: {url: "http://127.0.0.1:9/x", method: PUT, timeout: 3s, format: slack, retry: {max: 0, initialBackoff: 2s}}
rules: [{name: r, resources: [{kind: ConfigMap}], onStart: all, fire: enter, actions: [w]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	c, w := f.Config, f.Config.Actions[0].Webhook
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"shutdownGrace", c.ShutdownGrace.Std(), time.Second},
		{"queueSize", c.Actions[0].QueueSize, 7},
		{"concurrency", c.Actions[0].Concurrency, 2},
		{"method", w.Method, "PUT"},
		{"timeout", w.Timeout.Std(), 3 * time.Second},
		{"format", w.Format, FormatSlack},
		{"retry.max: 0 is no retries, not the default", *w.Retry.Max, 0},
		{"retry.initialBackoff", w.Retry.InitialBackoff.Std(), 2 * time.Second},
		{"retry.maxBackoff, left out", w.Retry.MaxBackoff.Std(), DefaultMaxBackoff},
		{"onStart", c.Rules[0].OnStart, OnStartAll},
		{"fire", c.Rules[0].Fire, FireEnter},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// The checks change nothing: the tree after the expansion and defaults steps
// is the tree after the checks, for a valid file and for one with problems.
func TestChecksChangeNothing(t *testing.T) {
	t.Setenv("DYNWATCH_TEST_CHECK_TOKEN", "secret")
	for _, tc := range []struct{ name, src string }{
		{"valid", `apiVersion: dynwatch/v1alpha1
defaults: {namespaces: [b, a]}
leaderElection: {namespace: ops}
redact: [{kind: ConfigMap, paths: [data.token]}]
actions:
  - {name: l, log: {}}
  - {name: w, webhook: {url: "http://127.0.0.1:9/x", headers: {Authorization: "Bearer ${DYNWATCH_TEST_CHECK_TOKEN}"}, format: cloudevents}}
  - {name: x, exec: {command: [/bin/true], env: {TOKEN: "${DYNWATCH_TEST_CHECK_TOKEN}"}}}
  - {name: k, kafka: {brokers: ["127.0.0.1:9092"], topic: t, sasl: {mechanism: PLAIN, username: u, password: "${DYNWATCH_TEST_CHECK_TOKEN}"}}}
  - {name: n, nats: {url: "nats://127.0.0.1:4222", subject: s, token: "${DYNWATCH_TEST_CHECK_TOKEN}"}}
rules:
  - {name: r, resources: [{kind: ConfigMap}], namespaces: [z, y, z], actions: [l, w, x, k, n]}
  - {name: r2, resources: [{kind: Secret}], actions: [l]}
`},
		{"with problems", `apiVersion: dynwatch/v1alpha1
defaults: {namespaces: [Bad_NS]}
leaderElection: {namespace: ops, renewDeadline: 1m}
redact: [{kind: ConfigMap}]
actions:
  - {name: w, webhook: {url: "ftp://x", method: get, headers: {X-Dynwatch-Id: x}, timeout: 0s, retry: {max: -1, initialBackoff: 1h}}}
  - {name: k, kafka: {acks: some, timeout: 1ms}, queueSize: -1}
  - {name: n, nats: {url: "http://x", subject: "a.*"}, log: {}}
rules: [{name: r, resources: [], namespaces: [Bad_Too], on: [create], onStart: diff, fire: sometimes, actions: [nope]}]
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(tc.src), &doc); err != nil {
				t.Fatal(err)
			}
			d := &decoder{file: "c.yaml", lines: map[string]int{}}
			cfg := &Config{}
			d.decode(&doc, reflectValue(cfg), "")
			if len(d.problems) > 0 {
				t.Fatalf("decoding: %v", d.problems)
			}
			v := &validator{file: &File{Path: "c.yaml", Config: cfg, lines: d.lines}}
			cfg.expandEnv(v)
			cfg.applyDefaults()
			before := snapshot(t, cfg)
			cfg.validate(v)
			if after := snapshot(t, cfg); after != before {
				t.Errorf("the checks changed the tree:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if (len(v.problems) > 0) != (tc.name == "with problems") {
				t.Errorf("problems: %v", v.problems)
			}
		})
	}
}

// snapshot is the whole tree as text, pointers followed.
func snapshot(t *testing.T, c *Config) string {
	t.Helper()
	b, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The expansion step runs before the defaults and checks: the checks see the
// values the environment gives, and a rule takes defaults.namespaces only
// after them (inheritDefaults), as a sorted set.
func TestExpansionAndInheritance(t *testing.T) {
	t.Setenv("DYNWATCH_TEST_CHECK_HOST", "127.0.0.1:9")
	f, err := Parse("e.yaml", []byte(`apiVersion: dynwatch/v1alpha1
defaults: {namespaces: [b, a, b]}
actions: [{name: w, webhook: {url: "http://${DYNWATCH_TEST_CHECK_HOST}/x"}}]
rules:
  - {name: r, resources: [{kind: ConfigMap}], actions: [w]}
  - {name: own, resources: [{kind: ConfigMap}], namespaces: [c], actions: [w]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Config.Actions[0].Webhook.URL; got != "http://127.0.0.1:9/x" {
		t.Errorf("url = %q", got)
	}
	if got := f.Config.Rules[0].Namespaces; !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("inherited namespaces = %v", got)
	}
	if got := f.Config.Rules[1].Namespaces; !reflect.DeepEqual(got, []string{"c"}) {
		t.Errorf("own namespaces = %v", got)
	}
	if got := f.Config.Defaults.Namespaces; !reflect.DeepEqual(got, []string{"b", "a", "b"}) {
		t.Errorf("defaults.namespaces = %v, want as written", got)
	}
}

// Package metrics is dynwatch's Prometheus series. Counters that the pipeline
// bumps live here; what other parts already count (action queues, informers)
// is read from them at scrape time, through snapshots, so that no hot path
// depends on the registry. Label values are bounded: resources, rules,
// actions, never object names.
//
// It imports no dynwatch package.
package metrics

import (
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// QueueSample is one action's queue at scrape time.
type QueueSample struct {
	Action                              string
	Delivered, Retries, Failed, Dropped uint64
	Depth                               int
	// Enqueued is how many deliveries the action's queues accepted (not
	// served as a series: deliveries_total says what became of them).
	Enqueued uint64
	// Grouped: the action groups its deliveries; GroupEvents wait in its open
	// groups, Groups is the grouped deliveries it made.
	Grouped     bool
	GroupEvents int
	Groups      uint64
}

// WatchSample is one watch at scrape time.
type WatchSample struct {
	Resource, Namespace string
	Synced              bool
	// LastEvent is when it last saw an event or a bookmark; zero if never.
	LastEvent time.Time
	// Objects is how many objects its cache holds.
	Objects int
	// Cluster names the watch's cluster with clusters; "" without them.
	Cluster string
}

// Sources give the samples read at scrape time; either may be nil.
type Sources struct {
	Queues  func() []QueueSample
	Watches func() []WatchSample
	// RuleErrors gives, per rule, the CEL evaluations that failed so far.
	RuleErrors func() map[string]uint64
	// Clusters gives, with clusters, whether each one answers.
	Clusters func() []ClusterSample
	// ClusterLabel gives the per-resource series (events, informer synced,
	// last event) a cluster label: set when the config has clusters at
	// start. Without it they are as they were before clusters.
	ClusterLabel bool
	// Timed gives, per timed rule, its objects pending (waiting for `for`)
	// and firing (entered, not yet exited).
	Timed func() map[string][2]int
	// Build is the binary's version and commit, served as
	// dynwatch_build_info with the Go version it was built with.
	Build Build
}

// Build is what dynwatch_build_info says of the binary.
type Build struct {
	Version, Commit string
}

// Metrics holds the series. A nil *Metrics counts nothing, so that code paths
// without a server (tests, tail) need no checks.
type Metrics struct {
	reg     *prometheus.Registry
	events  *prometheus.CounterVec
	matches *prometheus.CounterVec
	eval    prometheus.Histogram
	reloads *prometheus.CounterVec
	leader  prometheus.Gauge
	commits prometheus.Counter
	// clusterLabel: the per-resource series have a cluster label.
	clusterLabel bool
}

// New registers every series (and the Go and process collectors).
func New(src Sources) *Metrics {
	m := &Metrics{
		clusterLabel: src.ClusterLabel,
		reg:          prometheus.NewRegistry(),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dynwatch_events_total", Help: "Events seen by the informers, by resource and type.",
		}, withCluster(src.ClusterLabel, "resource", "type")),
		matches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dynwatch_rule_matches_total", Help: "Events a rule fired on.",
		}, []string{"rule"}),
		eval: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "dynwatch_rule_eval_seconds", Help: "Time to decide whether one rule fires on one event.",
			Buckets: prometheus.ExponentialBuckets(250e-9, 4, 10), // 250ns to about 65ms
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dynwatch_config_reloads_total", Help: "Config reloads, by result (ok, failed).",
		}, []string{"result"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dynwatch_leader", Help: "1 when this replica acts (leads, or runs without leader election), else 0.",
		}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dynwatch_state_commit_failures_total", Help: "Transactions the state file refused (disk full, file too large, read-only, fsync failed); each is retried, its events wait in memory.",
		}),
	}
	m.reg.MustRegister(m.events, m.matches, m.eval, m.reloads, m.leader, m.commits, buildInfo(src.Build),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newSampled(src), &clusters{src: src.Clusters})
	for _, r := range []string{"ok", "failed"} {
		m.reloads.WithLabelValues(r)
	}
	return m
}

// buildInfo is the constant 1 labelled with what the binary is, so that a
// query can join it (`* on(instance) group_left(version) dynwatch_build_info`)
// or count the versions a rollout runs.
func buildInfo(b Build) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dynwatch_build_info", Help: "1, labelled with the version and commit dynwatch was built from and the Go version it was built with.",
	}, []string{"version", "commit", "goversion"})
	g.WithLabelValues(b.Version, b.Commit, runtime.Version()).Set(1)
	return g
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Event counts an event seen for resource (of the one cluster).
func (m *Metrics) Event(resource, typ string) { m.EventIn("", resource, typ) }

// EventIn counts an event seen for resource in the named cluster; "" is the
// one cluster, whose series have an empty cluster label (Prometheus stores
// them without one, so queries written before clusters keep working).
func (m *Metrics) EventIn(cluster, resource, typ string) {
	switch {
	case m == nil:
	case m.clusterLabel:
		m.events.WithLabelValues(resource, typ, cluster).Inc()
	default:
		m.events.WithLabelValues(resource, typ).Inc()
	}
}

// Evaluated records how long one rule took to decide on one event, and
// whether it fired.
func (m *Metrics) Evaluated(rule string, took time.Duration, fired bool) {
	if m == nil {
		return
	}
	m.eval.Observe(took.Seconds())
	if fired {
		m.matches.WithLabelValues(rule).Inc()
	}
}

// Reloaded counts a config reload.
func (m *Metrics) Reloaded(ok bool) {
	if m == nil {
		return
	}
	if ok {
		m.reloads.WithLabelValues("ok").Inc()
	} else {
		m.reloads.WithLabelValues("failed").Inc()
	}
}

// StateCommitFailed counts a transaction the state file refused.
func (m *Metrics) StateCommitFailed() {
	if m != nil {
		m.commits.Inc()
	}
}

// SetLeader says whether this replica acts.
func (m *Metrics) SetLeader(acting bool) {
	if m == nil {
		return
	}
	if acting {
		m.leader.Set(1)
	} else {
		m.leader.Set(0)
	}
}

var (
	deliveriesDesc = prometheus.NewDesc("dynwatch_deliveries_total", "Delivery attempts by action and result: ok, retry, failed (gave up), dropped (queue full or stopped).", []string{"action", "result"}, nil)
	depthDesc      = prometheus.NewDesc("dynwatch_queue_depth", "Undelivered events of an action, queued or in flight: in memory and, with state.path, on disk.", []string{"action"}, nil)
	syncedDesc     = prometheus.NewDesc("dynwatch_informer_synced", "1 when the watch has listed once, else 0 (still listing, or failing: forbidden, not served).", []string{"resource", "namespace"}, nil)
	ruleErrorsDesc = prometheus.NewDesc("dynwatch_rule_eval_errors_total", "CEL evaluations that failed (no such key, the cost limit, not a bool) and counted as false.", []string{"rule"}, nil)
	lastEventDesc  = prometheus.NewDesc("dynwatch_watch_last_event_timestamp_seconds", "When the watch last saw an event or a bookmark.", []string{"resource", "namespace"}, nil)
	objectsDesc    = prometheus.NewDesc("dynwatch_informer_objects", "Objects in the watch's cache (with shards, only the shard's).", []string{"resource", "namespace"}, nil)
	groupEvDesc    = prometheus.NewDesc("dynwatch_group_events", "Events of a grouped action waiting in its open groups (counted in dynwatch_queue_depth too).", []string{"action"}, nil)
	groupsDesc     = prometheus.NewDesc("dynwatch_groups_total", "Grouped deliveries an action made.", []string{"action"}, nil)
	pendingDesc    = prometheus.NewDesc("dynwatch_pending", "Objects whose conditions hold and whose rule's `for` has not passed yet.", []string{"rule"}, nil)
	firingDesc     = prometheus.NewDesc("dynwatch_firing", "Objects a timed rule entered and has not exited.", []string{"rule"}, nil)
)

// sampled reads the queues' and informers' own counts at scrape time.
type sampled struct {
	src Sources
	// synced, lastEvent and objects are the watches' descriptors: with a
	// cluster label when src.ClusterLabel.
	synced, lastEvent, objects *prometheus.Desc
}

func (s *sampled) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{deliveriesDesc, depthDesc, s.synced, s.lastEvent, ruleErrorsDesc, s.objects, groupEvDesc, groupsDesc, pendingDesc, firingDesc} {
		ch <- d
	}
}

func (s *sampled) Collect(ch chan<- prometheus.Metric) {
	if s.src.Queues != nil {
		for _, q := range s.src.Queues() {
			for result, n := range map[string]uint64{"ok": q.Delivered, "retry": q.Retries, "failed": q.Failed, "dropped": q.Dropped} {
				ch <- prometheus.MustNewConstMetric(deliveriesDesc, prometheus.CounterValue, float64(n), q.Action, result)
			}
			ch <- prometheus.MustNewConstMetric(depthDesc, prometheus.GaugeValue, float64(q.Depth), q.Action)
			if q.Grouped {
				ch <- prometheus.MustNewConstMetric(groupEvDesc, prometheus.GaugeValue, float64(q.GroupEvents), q.Action)
				ch <- prometheus.MustNewConstMetric(groupsDesc, prometheus.CounterValue, float64(q.Groups), q.Action)
			}
		}
	}
	if s.src.Timed != nil {
		for rule, c := range s.src.Timed() {
			ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(c[0]), rule)
			ch <- prometheus.MustNewConstMetric(firingDesc, prometheus.GaugeValue, float64(c[1]), rule)
		}
	}
	if s.src.RuleErrors != nil {
		for rule, n := range s.src.RuleErrors() {
			ch <- prometheus.MustNewConstMetric(ruleErrorsDesc, prometheus.CounterValue, float64(n), rule)
		}
	}
	if s.src.Watches != nil {
		for _, w := range s.src.Watches() {
			synced := 0.0
			if w.Synced {
				synced = 1
			}
			ch <- prometheus.MustNewConstMetric(s.synced, prometheus.GaugeValue, synced, s.watchLabels(w)...)
			ch <- prometheus.MustNewConstMetric(s.objects, prometheus.GaugeValue, float64(w.Objects), s.watchLabels(w)...)
			if !w.LastEvent.IsZero() {
				ch <- prometheus.MustNewConstMetric(s.lastEvent, prometheus.GaugeValue, float64(w.LastEvent.UnixNano())/1e9, s.watchLabels(w)...)
			}
		}
	}
}

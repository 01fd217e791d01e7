package charttest

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dynwatch/dynwatch/metrics"
)

// targetLabels are what a scrape adds to every series (the Prometheus
// Operator's ServiceMonitor: namespace, pod, service, job, instance, ...),
// and exported_namespace: a series' own namespace label (a watch's), renamed
// so where the target sets namespace.
var targetLabels = []string{"namespace", "pod", "service", "job", "instance", "container", "endpoint", "exported_namespace"}

// served is what /metrics serves: each series name with its label names, the
// values of its closed labels (closedLabels) and whether it is a gauge.
type served struct {
	labels map[string][]string
	values map[string]map[string][]string
	gauges map[string]bool
}

// closedLabels have a fixed set of values, all of which a scrape of
// registered's samples shows (result: ok, retry, failed, dropped for
// deliveries; ok, failed for reloads); a matcher on another value selects
// nothing, ever.
var closedLabels = []string{"result"}

// registered is every series name /metrics serves, with its label names: the
// registry of package metrics, scraped with a sample of each source, parsed
// as Prometheus parses it.
func registered(t *testing.T) served {
	t.Helper()
	m := metrics.New(metrics.Sources{
		Queues: func() []metrics.QueueSample {
			return []metrics.QueueSample{{Action: "out", Depth: 1}, {Action: "grouped", Depth: 1, Grouped: true, GroupEvents: 1, Groups: 1}}
		},
		Watches: func() []metrics.WatchSample {
			return []metrics.WatchSample{{Resource: "configmaps", Synced: true, LastEvent: time.Now(), Objects: 1}}
		},
		RuleErrors: func() map[string]uint64 { return map[string]uint64{"r": 1} },
		Clusters:   func() []metrics.ClusterSample { return []metrics.ClusterSample{{Name: "east", Up: true}} },
	})
	m.SetShard(0, 2) // what a shard serves too
	m.Event("configmaps", "add")
	m.Evaluated("r", time.Microsecond, true)
	m.Reloaded(true)
	m.Reloaded(false)
	m.StateCommitFailed()
	m.SetLeader(true)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	srv := served{labels: out, values: map[string]map[string][]string{}, gauges: map[string]bool{}}
	for name, f := range fams {
		var ls []string
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				ls = append(ls, l.GetName())
				if slices.Contains(closedLabels, l.GetName()) {
					if srv.values[name] == nil {
						srv.values[name] = map[string][]string{}
					}
					srv.values[name][l.GetName()] = append(srv.values[name][l.GetName()], l.GetValue())
				}
			}
		}
		if f.GetType().String() == "GAUGE" {
			srv.gauges[name] = true
		}
		switch f.GetType().String() {
		case "HISTOGRAM":
			out[name+"_bucket"] = append(slices.Clone(ls), "le")
			out[name+"_sum"], out[name+"_count"] = ls, ls
		case "SUMMARY":
			out[name] = append(slices.Clone(ls), "quantile")
			out[name+"_sum"], out[name+"_count"] = ls, ls
		default:
			out[name] = ls
		}
	}
	// up is the scrape's own series for each target (1: scraped).
	out["up"] = nil
	srv.gauges["up"] = true
	return srv
}

// grafanaVar is a Grafana variable in an expression: $name or ${name}.
var grafanaVar = regexp.MustCompile(`\$\{?(\w+)\}?`)

// promQL is expr with Grafana's variables replaced as Grafana would
// ($__rate_interval and the like by a range, the dashboard's by a regexp).
func promQL(expr string) string {
	return grafanaVar.ReplaceAllStringFunc(expr, func(v string) string {
		if strings.HasPrefix(strings.Trim(v, "${}"), "__") {
			return "5m"
		}
		return ".*"
	})
}

// labelValues is a Grafana variable query label_values(METRIC, LABEL).
var labelValues = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)

// problems returns what is wrong with expr: it does not parse, or uses a
// metric the code does not register, or a label matcher or grouping label that
// no selected metric (nor the scrape) has, or a matcher on a value a closed
// label never takes, or rate/irate/increase over a gauge.
func problems(where, expr string, srv served) []string {
	known := srv.labels
	var out []string
	if m := labelValues.FindStringSubmatch(expr); m != nil {
		names, errs := metricsIn(where, m[1])
		out = append(out, errs...)
		out = append(out, problems(where, m[1], srv)...)
		return append(out, labelProblem(where, expr, m[2], names, known)...)
	}
	e, err := parser.NewParser(parser.Options{}).ParseExpr(promQL(expr))
	if err != nil {
		return []string{where + ": " + strconv.Quote(expr) + " does not parse: " + err.Error()}
	}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			if _, ok := known[n.Name]; !ok {
				out = append(out, fmt.Sprintf("%s: %q uses %s, which dynwatch does not register", where, expr, n.Name))
				return nil
			}
			for _, m := range n.LabelMatchers {
				if slices.Contains(optionalLabels, m.Name) && m.Matches("") {
					continue // selects the series without the label too
				}
				if m.Name != model.MetricNameLabel {
					out = append(out, labelProblem(where, expr, m.Name, []string{n.Name}, known)...)
					out = append(out, valueProblem(where, expr, n.Name, m, srv)...)
				}
			}
		case *parser.Call:
			if slices.Contains([]string{"rate", "irate", "increase"}, n.Func.Name) {
				for _, name := range metricNames(n.Args) {
					if srv.gauges[name] {
						out = append(out, fmt.Sprintf("%s: %q takes %s of %s, a gauge (use deriv or delta, or the gauge itself)", where, expr, n.Func.Name, name))
					}
				}
			}
		case *parser.AggregateExpr:
			if !n.Without {
				for _, l := range n.Grouping {
					out = append(out, labelProblem(where, expr, l, metricNames(n.Expr), known)...)
				}
			}
		}
		return nil
	})
	return out
}

// optionalLabels are labels that dynwatch's series have under some configs
// only (cluster: with clusters, on the per-resource series); a matcher on one
// that also matches the empty value is right on any series, since it selects
// those without the label as well.
var optionalLabels = []string{"cluster"}

// valueProblem: an equality matcher, or a regexp matcher that is an
// alternation of plain words, on a closed label must name values it takes.
func valueProblem(where, expr, metric string, m *labels.Matcher, srv served) []string {
	vals, ok := srv.values[metric][m.Name]
	if !ok {
		return nil
	}
	var want []string
	switch {
	case m.Type == labels.MatchEqual || m.Type == labels.MatchNotEqual:
		want = []string{m.Value}
	case plainAlternation.MatchString(m.Value):
		want = strings.Split(m.Value, "|")
	}
	var out []string
	for _, v := range want {
		if !slices.Contains(vals, v) {
			out = append(out, fmt.Sprintf("%s: %q matches %s=%q, which dynwatch never serves (it serves %v)", where, expr, m.Name, v, vals))
		}
	}
	return out
}

// plainAlternation is a regexp matcher value such as failed|dropped.
var plainAlternation = regexp.MustCompile(`^\w+(\|\w+)*$`)

func labelProblem(where, expr, label string, names []string, known map[string][]string) []string {
	if slices.Contains(targetLabels, label) {
		return nil
	}
	for _, n := range names {
		if slices.Contains(known[n], label) {
			return nil
		}
	}
	return []string{fmt.Sprintf("%s: %q uses the label %s, which none of %v has", where, expr, label, names)}
}

// metricsIn are the metric names expr selects.
func metricsIn(where, expr string) ([]string, []string) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(promQL(expr))
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: %q does not parse: %v", where, expr, err)}
	}
	return metricNames(e), nil
}

func metricNames(e parser.Node) []string {
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if v, ok := n.(*parser.VectorSelector); ok {
			names = append(names, v.Name)
		}
		return nil
	})
	return names
}

// dashboard is deploy/grafana/dynwatch.json.
type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title   string  `json:"title"`
	Type    string  `json:"type"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "dynwatch.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("deploy/grafana/dynwatch.json: %v", err)
	}
	return d
}

// exprs are the dashboard's queries by panel title.
func (d dashboard) exprs() map[string][]string {
	out := map[string][]string{}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				out["panel "+p.Title] = append(out["panel "+p.Title], tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		out["variable "+v.Name] = append(out["variable "+v.Name], q)
	}
	return out
}

// Every query of the dashboard parses and uses only series, and labels, that
// dynwatch serves; and the dashboard shows each part of the pipeline.
func TestDashboardUsesRegisteredMetrics(t *testing.T) {
	known := registered(t)
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Error("the dashboard has no uid or title")
	}
	used := map[string]bool{}
	for where, exprs := range d.exprs() {
		for _, e := range exprs {
			if strings.TrimSpace(e) == "" {
				t.Errorf("%s: an empty query", where)
				continue
			}
			for _, p := range problems(where, e, known) {
				t.Error(p)
			}
			q := e
			if m := labelValues.FindStringSubmatch(e); m != nil {
				q = m[1]
			}
			names, _ := metricsIn(where, q)
			for _, n := range names {
				used[n] = true
			}
		}
	}
	for _, want := range []string{"dynwatch_events_total", "dynwatch_rule_matches_total", "dynwatch_deliveries_total", "dynwatch_queue_depth",
		"dynwatch_informer_synced", "dynwatch_watch_last_event_timestamp_seconds", "dynwatch_leader"} {
		if !used[want] {
			t.Errorf("no panel shows %s", want)
		}
	}
}

// alertNames are the alerts of a PrometheusRule, each checked to have an
// expression.
func alertNames(t *testing.T, rule *unstructured.Unstructured) []string {
	t.Helper()
	var names []string
	for name := range alerts(t, rule) {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// alerts are a PrometheusRule's alert expressions by name.
func alerts(t *testing.T, rule *unstructured.Unstructured) map[string]string {
	t.Helper()
	out := map[string]string{}
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			r := r.(map[string]any)
			name, _ := r["alert"].(string)
			expr, _ := r["expr"].(string)
			if name == "" || expr == "" {
				t.Errorf("a rule without alert or expr: %v", r)
				continue
			}
			out[name] = expr
		}
	}
	return out
}

// The chart's alerts parse and use only what dynwatch serves (their
// runbooks: TestAlertsHaveRunbooks).
func TestAlertsUseRegisteredMetrics(t *testing.T) {
	known := registered(t)
	objs := mustRender(t, values{set: "prometheusRule.enabled=true"})
	got := alerts(t, one(t, objs, "PrometheusRule"))
	if len(got) == 0 {
		t.Fatal("no alerts")
	}
	for name, expr := range got {
		for _, p := range problems("alert "+name, expr, known) {
			t.Error(p)
		}
	}
}

// The expression check itself: an unknown metric, a label the metric lacks and
// a grouping label no metric has are all caught.
func TestCheckExprCatches(t *testing.T) {
	known := registered(t)
	for _, expr := range []string{
		`rate(dynwatch_event_total[5m])`,
		`dynwatch_queue_depth{rule="x"}`,
		`sum by (rule) (dynwatch_queue_depth)`,
		`label_values(dynwatch_leader, action)`,
		`rate(dynwatch_events_total[5m]`,
		`rate(dynwatch_deliveries_total{result="error"}[5m]) > 0`,
		`sum(rate(dynwatch_deliveries_total{result=~"failed|gaveup"}[5m]))`,
		`increase(dynwatch_config_reloads_total{result="retry"}[15m])`,
		`rate(dynwatch_queue_depth[5m])`,
		`increase(dynwatch_leader[1h])`,
	} {
		if len(problems("test", expr, known)) == 0 {
			t.Errorf("%q passed the check", expr)
		}
	}
	for _, expr := range []string{
		`sum by (namespace, action) (rate(dynwatch_deliveries_total{result="ok"}[$__rate_interval]))`,
		`histogram_quantile(0.99, sum by (le) (rate(dynwatch_rule_eval_seconds_bucket[5m])))`,
		`label_values(dynwatch_leader, namespace)`,
	} {
		if p := problems("test", expr, known); len(p) > 0 {
			t.Errorf("%q fails the check: %v", expr, p)
		}
	}
}

// With no replica running there is no dynwatch_leader series, so
// DynwatchNoLeader cannot fire: DynwatchDown covers it, with absent(up)
// for no target at all and up == 0 for targets that do not answer; both
// keep the job, so that two releases in a namespace are told apart.
func TestAlertsFireWithNoReplica(t *testing.T) {
	got := alerts(t, one(t, mustRender(t, values{set: "prometheusRule.enabled=true"}), "PrometheusRule"))
	down, ok := got["DynwatchDown"]
	if !ok {
		t.Fatal("no DynwatchDown alert")
	}
	e, err := parser.NewParser(parser.Options{}).ParseExpr(down)
	if err != nil {
		t.Fatal(err)
	}
	var absentUp bool
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if c, ok := n.(*parser.Call); ok && c.Func.Name == "absent" && slices.Contains(metricNames(c.Args), "up") {
			absentUp = true
		}
		return nil
	})
	if !absentUp || !strings.Contains(down, "up{") || !strings.Contains(down, "== 0") {
		t.Errorf("DynwatchDown %q: want up == 0 or absent(up)", down)
	}
	for _, name := range []string{"DynwatchDown", "DynwatchNoLeader"} {
		if !strings.Contains(got[name], "by (namespace, job)") {
			t.Errorf("%s %q does not keep namespace and job", name, got[name])
		}
	}
}

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
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dynwatch/dynwatch/metrics"
)

// targetLabels are what a scrape adds to every series (the Prometheus
// Operator's ServiceMonitor: namespace, pod, service, job, instance, ...),
// and exported_namespace: a series' own namespace label (a watch's), renamed
// so where the target sets namespace.
var targetLabels = []string{"namespace", "pod", "service", "job", "instance", "container", "endpoint", "exported_namespace"}

// registered is every series name /metrics serves, with its label names: the
// registry of package metrics, scraped with a sample of each source, parsed
// as Prometheus parses it.
func registered(t *testing.T) map[string][]string {
	t.Helper()
	m := metrics.New(metrics.Sources{
		Queues: func() []metrics.QueueSample { return []metrics.QueueSample{{Action: "out", Depth: 1}} },
		Watches: func() []metrics.WatchSample {
			return []metrics.WatchSample{{Resource: "configmaps", Synced: true, LastEvent: time.Now()}}
		},
		RuleErrors: func() map[string]uint64 { return map[string]uint64{"r": 1} },
	})
	m.Event("configmaps", "add")
	m.Evaluated("r", time.Microsecond, true)
	m.Reloaded(true)
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
	for name, f := range fams {
		var ls []string
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				ls = append(ls, l.GetName())
			}
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
	return out
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
// no selected metric (nor the scrape) has.
func problems(where, expr string, known map[string][]string) []string {
	var out []string
	if m := labelValues.FindStringSubmatch(expr); m != nil {
		names, errs := metricsIn(where, m[1])
		out = append(out, errs...)
		out = append(out, problems(where, m[1], known)...)
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
				if m.Name != model.MetricNameLabel {
					out = append(out, labelProblem(where, expr, m.Name, []string{n.Name}, known)...)
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

// The chart's alerts parse, use only what dynwatch serves, and each has a
// runbook in the README.
func TestAlertsUseRegisteredMetrics(t *testing.T) {
	known := registered(t)
	objs := mustRender(t, values{set: "prometheusRule.enabled=true"})
	got := alerts(t, one(t, objs, "PrometheusRule"))
	if len(got) == 0 {
		t.Fatal("no alerts")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name, expr := range got {
		for _, p := range problems("alert "+name, expr, known) {
			t.Error(p)
		}
		if !strings.Contains(string(readme), "\n#### "+name+"\n") {
			t.Errorf("the README has no runbook (#### %s) for the alert", name)
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

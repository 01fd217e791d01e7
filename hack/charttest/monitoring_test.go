package charttest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// notes is the rendering's NOTES.txt.
func notes(t *testing.T, v values) string {
	t.Helper()
	files, err := renderFiles(v)
	if err != nil {
		t.Fatal(err)
	}
	return files["dynwatch/templates/NOTES.txt"]
}

// NOTES.txt says how Prometheus gets to the metrics: who the NetworkPolicy
// lets scrape and the value that changes it, the ServiceMonitor's labels
// (and kube-prometheus-stack's release: hint while none is set), the
// dashboard's ConfigMap, and what a failed config check means.
func TestNotes(t *testing.T) {
	const custom = `networkPolicy:
  from:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}
      podSelector: {matchLabels: {app.kubernetes.io/name: prometheus}}
    - podSelector: {matchLabels: {role: scraper}}
`
	for _, tc := range []struct {
		v          values
		want, none []string
	}{
		{values{}, []string{
			"admits scrapes of /metrics only from (networkPolicy.from):\n  - namespaces labelled dynwatch.io/scrape=true, any pod in them\n",
			"kubectl label namespace NAMESPACE dynwatch.io/scrape=true", "Change networkPolicy.from",
			"serviceMonitor.enabled=true adds a ServiceMonitor",
			"kubectl -n dynwatch logs job/dynwatch-check", "fails helm install or helm upgrade",
		}, []string{"release=<its release name>", "dashboard"}},
		{values{file: custom}, []string{
			"  - namespaces labelled kubernetes.io/metadata.name=monitoring, pods labelled app.kubernetes.io/name=prometheus\n",
			"  - pods labelled role=scraper, in dynwatch\n",
		}, []string{"kubectl label namespace"}},
		{values{set: "networkPolicy.enabled=false,configCheck.enabled=false"}, nil, []string{"NetworkPolicy", "networkPolicy.from", "job/dynwatch-check"}},
		{values{set: "serviceMonitor.enabled=true,prometheusRule.enabled=true"}, []string{
			"The ServiceMonitor dynwatch has the labels none of its own.",
			"labelled\nrelease=<its release name>: set serviceMonitor.labels.release (and prometheusRule.labels.release) to it.",
			"The PrometheusRule dynwatch has dynwatch's alerts, each with a runbook_url",
		}, nil},
		{values{set: "serviceMonitor.enabled=true,serviceMonitor.labels.release=kps,grafanaDashboard.enabled=true,grafanaDashboard.namespace=monitoring"}, []string{
			"The ServiceMonitor dynwatch has the labels release=kps.",
			"The dashboard is the ConfigMap monitoring/dynwatch-dashboard, labelled grafana_dashboard=1",
		}, []string{"release=<its release name>"}},
	} {
		t.Run(tc.v.String(), func(t *testing.T) {
			n := notes(t, tc.v)
			for _, w := range tc.want {
				if !strings.Contains(n, w) {
					t.Errorf("NOTES.txt lacks %q:\n%s", w, n)
				}
			}
			for _, w := range tc.none {
				if strings.Contains(n, w) {
					t.Errorf("NOTES.txt has %q:\n%s", w, n)
				}
			}
		})
	}
}

// runbookURL is where an alert's runbook is: its page under docs/runbooks.
const runbookURL = "https://github.com/dynwatch/dynwatch/blob/main/docs/runbooks/"

// ruleFiles are the Prometheus rule files of the repository: the chart's
// alerts, and any copy under deploy/.
func ruleFiles(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(chartDir, "files", "alerts.yaml")}
	err := filepath.WalkDir(filepath.Join("..", "..", "deploy"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml")) {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && regexp.MustCompile(`(?m)^\s*-?\s*alert:`).Match(b) {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Every alert, in the chart and in any rule file under deploy/, has a
// runbook_url to its own page under docs/runbooks, and the page exists and
// is about it.
func TestAlertsHaveRunbooks(t *testing.T) {
	n := 0
	for _, f := range ruleFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rf struct {
			Groups []struct {
				Rules []struct {
					Alert       string            `json:"alert"`
					Annotations map[string]string `json:"annotations"`
				} `json:"rules"`
			} `json:"groups"`
		}
		if err := yaml.Unmarshal(b, &rf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				if r.Alert == "" {
					continue
				}
				n++
				if got := r.Annotations["runbook_url"]; got != runbookURL+r.Alert+".md" {
					t.Errorf("%s: %s's runbook_url is %q, want %s%s.md", f, r.Alert, got, runbookURL, r.Alert)
					continue
				}
				page, err := os.ReadFile(filepath.Join("..", "..", "docs", "runbooks", r.Alert+".md"))
				if err != nil {
					t.Errorf("%s: %s's runbook: %v", f, r.Alert, err)
					continue
				}
				if !bytes.HasPrefix(page, []byte("# "+r.Alert+"\n")) {
					t.Errorf("docs/runbooks/%s.md does not start with its alert's name as its title", r.Alert)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no alerts found")
	}
}

// grafanaJSON is deploy/grafana/dynwatch.json's text.
func grafanaJSON(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "dynwatch.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// grafanaDashboard.enabled renders the dashboard, deploy/grafana's (its text
// but for the final line break), as a ConfigMap labelled for Grafana's sidecar, in grafanaDashboard.namespace or
// the release's; off by default.
func TestGrafanaDashboardConfigMap(t *testing.T) {
	if got := ofKind(mustRender(t, values{}), "ConfigMap"); len(got) != 2 {
		t.Errorf("by default %d ConfigMaps, want the config's and the check's", len(got))
	}
	for _, tc := range []struct {
		set, ns string
		labels  map[string]string
	}{
		{"grafanaDashboard.enabled=true", namespace, map[string]string{"grafana_dashboard": "1"}},
		{"grafanaDashboard.enabled=true,grafanaDashboard.namespace=monitoring,grafanaDashboard.labels.team=ops,grafanaDashboard.annotations.grafana_folder=dynwatch",
			"monitoring", map[string]string{"grafana_dashboard": "1", "team": "ops"}},
	} {
		t.Run(tc.set, func(t *testing.T) {
			cm := named(t, mustRender(t, values{set: tc.set}), "ConfigMap", release+"-dashboard")
			if cm.GetNamespace() != tc.ns {
				t.Errorf("in namespace %q, want %q", cm.GetNamespace(), tc.ns)
			}
			for k, v := range tc.labels {
				if cm.GetLabels()[k] != v {
					t.Errorf("labels %v, want %s=%s", cm.GetLabels(), k, v)
				}
			}
			data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
			got := data["dynwatch.json"]
			if !json.Valid([]byte(got)) {
				t.Fatalf("dynwatch.json is not JSON:\n%s", got)
			}
			if got != strings.TrimSuffix(string(grafanaJSON(t)), "\n") {
				t.Error("the ConfigMap's dynwatch.json is not deploy/grafana/dynwatch.json (copy it to charts/dynwatch/files/dashboard.json)")
			}
		})
	}
}

// clusterVar is Grafana's $cluster (or ${cluster}).
var clusterVar = regexp.MustCompile(`\$\{?cluster\}?`)

// The dashboard has a cluster variable over a series that has the cluster
// label, with All; every panel's every selector filters on it so that a
// chosen cluster keeps that cluster's series and drops another's, yet keeps
// the series without a cluster label (no clusters configured, or not per
// cluster: deliveries, queues, the process), and All keeps everything.
func TestDashboardClusterVariable(t *testing.T) {
	known := registered(t)
	d := readDashboard(t)
	var raw struct {
		Templating struct {
			List []map[string]any `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(grafanaJSON(t), &raw); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	for _, x := range raw.Templating.List {
		if x["name"] == "cluster" {
			v = x
		}
	}
	if v == nil {
		t.Fatal("no cluster variable")
	}
	q := d.exprs()["variable cluster"]
	m := labelValues.FindStringSubmatch(strings.Join(q, ""))
	if len(q) != 1 || m == nil || m[2] != "cluster" {
		t.Fatalf("the cluster variable's query is %q, want label_values(SERIES, cluster)", q)
	}
	for _, p := range problems("variable cluster", q[0], known) {
		t.Error(p)
	}
	if v["includeAll"] != true || v["allValue"] != ".*" {
		t.Errorf("the cluster variable: includeAll %v, allValue %v: want All as .*, which every series matches", v["includeAll"], v["allValue"])
	}
	n := 0
	for where, exprs := range d.exprs() {
		if !strings.HasPrefix(where, "panel ") {
			continue
		}
		for _, e := range exprs {
			n++
			checkClusterFilter(t, where, e)
		}
	}
	if n == 0 {
		t.Fatal("no panel queries")
	}
}

// checkClusterFilter parses expr with $cluster as one cluster (east) and as
// All (.*) and checks each selector's cluster matcher.
func checkClusterFilter(t *testing.T, where, expr string) {
	t.Helper()
	if !clusterVar.MatchString(expr) {
		t.Errorf("%s: %q does not use $cluster", where, expr)
		return
	}
	for _, c := range []struct {
		value          string
		match, noMatch []string
	}{
		{"east", []string{"east", ""}, []string{"west"}},
		{".*", []string{"east", "west", ""}, nil},
	} {
		e, err := parser.NewParser(parser.Options{}).ParseExpr(promQL(clusterVar.ReplaceAllString(expr, c.value)))
		if err != nil {
			t.Errorf("%s: %q with cluster %s: %v", where, expr, c.value, err)
			return
		}
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			sel, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			var cm *labels.Matcher
			for _, m := range sel.LabelMatchers {
				if m.Name == "cluster" {
					cm = m
				}
			}
			if cm == nil {
				t.Errorf("%s: %s in %q has no cluster matcher", where, sel.Name, expr)
				return nil
			}
			for _, s := range c.match {
				if !cm.Matches(s) {
					t.Errorf("%s: with cluster %s, %s drops series of cluster %q", where, c.value, sel, s)
				}
			}
			for _, s := range c.noMatch {
				if cm.Matches(s) {
					t.Errorf("%s: with cluster %s, %s keeps series of cluster %q", where, c.value, sel, s)
				}
			}
			return nil
		})
	}
}

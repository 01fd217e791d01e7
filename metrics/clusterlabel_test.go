package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// With clusters, every per-watch series carries the cluster label, so the
// same resource and namespace in two clusters are two series, and the
// scrape succeeds (a config cannot bring clusters to a daemon started
// without them: that applies after a restart, see the watcher's reload).
func TestClusterLabelOnEveryWatchSeries(t *testing.T) {
	now := time.Now()
	m := New(Sources{Watches: func() []WatchSample {
		return []WatchSample{
			{Resource: "configmaps", Namespace: "ns", Synced: true, LastEvent: now, Cluster: "east", Objects: 2},
			{Resource: "configmaps", Namespace: "ns", Synced: true, LastEvent: now, Cluster: "west", Objects: 3},
		}
	}, ClusterLabel: true})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics = %d:\n%s", rec.Code, firstLines(rec.Body.String(), 4))
	}
	body := rec.Body.String()
	for _, want := range []string{
		`dynwatch_informer_synced{cluster="east",namespace="ns",resource="configmaps"} 1`,
		`dynwatch_informer_synced{cluster="west",namespace="ns",resource="configmaps"} 1`,
		`dynwatch_informer_objects{cluster="east",namespace="ns",resource="configmaps"} 2`,
		`dynwatch_informer_objects{cluster="west",namespace="ns",resource="configmaps"} 3`,
		`dynwatch_watch_last_event_timestamp_seconds{cluster="west",namespace="ns",resource="configmaps"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	if len(l) > n {
		l = l[:n]
	}
	return strings.Join(l, "\n")
}

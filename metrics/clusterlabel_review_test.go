package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A daemon started without clusters has no cluster label (ClusterLabel is
// decided at start); a reload that then adds two clusters watching the same
// resource in the same namespace yields two watch samples with the same
// {resource, namespace}: the scrape must still succeed (one series per
// cluster, or at least no collect error), not answer 500.
func TestReloadAddingClustersKeepsScrapeValid(t *testing.T) {
	now := time.Now()
	m := New(Sources{Watches: func() []WatchSample {
		return []WatchSample{
			{Resource: "configmaps", Namespace: "ns", Synced: true, LastEvent: now, Cluster: "east"},
			{Resource: "configmaps", Namespace: "ns", Synced: true, LastEvent: now, Cluster: "west"},
		}
	}, ClusterLabel: false})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics = %d after clusters were added by a reload:\n%s", rec.Code, firstLines(rec.Body.String(), 4))
	}
	if !strings.Contains(rec.Body.String(), "dynwatch_informer_synced") {
		t.Error("/metrics lacks dynwatch_informer_synced")
	}
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	if len(l) > n {
		l = l[:n]
	}
	return strings.Join(l, "\n")
}

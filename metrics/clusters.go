package metrics

import "github.com/prometheus/client_golang/prometheus"

// ClusterSample is one named cluster at scrape time.
type ClusterSample struct {
	Name string
	Up   bool
}

var clusterUpDesc = prometheus.NewDesc("dynwatch_cluster_up", "With clusters: 1 while the cluster's API server answers discovery, else 0 (not reached yet, or unreachable: its watches wait and retry, the other clusters go on).", []string{"cluster"}, nil)

// clusters reads the clusters' reachability at scrape time.
type clusters struct{ src func() []ClusterSample }

func (c *clusters) Describe(ch chan<- *prometheus.Desc) { ch <- clusterUpDesc }

func (c *clusters) Collect(ch chan<- prometheus.Metric) {
	if c.src == nil {
		return
	}
	for _, cl := range c.src() {
		up := 0.0
		if cl.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(clusterUpDesc, prometheus.GaugeValue, up, cl.Name)
	}
}

// withCluster returns labels, and cluster after them when on.
func withCluster(on bool, labels ...string) []string {
	if on {
		return append(labels, "cluster")
	}
	return labels
}

// newSampled returns the collector of what is read at scrape time, its
// watch series with a cluster label when src.ClusterLabel.
func newSampled(src Sources) *sampled {
	s := &sampled{src: src, synced: syncedDesc, lastEvent: lastEventDesc, objects: objectsDesc}
	if src.ClusterLabel {
		s.synced = prometheus.NewDesc("dynwatch_informer_synced", "1 when the watch has listed once, else 0 (still listing, or failing: forbidden, not served).", withCluster(true, "resource", "namespace"), nil)
		s.lastEvent = prometheus.NewDesc("dynwatch_watch_last_event_timestamp_seconds", "When the watch last saw an event or a bookmark.", withCluster(true, "resource", "namespace"), nil)
		s.objects = prometheus.NewDesc("dynwatch_informer_objects", "Objects in the watch's cache (with shards, only the shard's).", withCluster(true, "resource", "namespace"), nil)
	}
	return s
}

// watchLabels are the label values of a watch's series.
func (s *sampled) watchLabels(w WatchSample) []string {
	if s.src.ClusterLabel {
		return []string{w.Resource, w.Namespace, w.Cluster}
	}
	return []string{w.Resource, w.Namespace}
}

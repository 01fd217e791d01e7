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

package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// SetShard registers dynwatch_shard{index,count} (always 1) for a process
// that is one shard of several; a process of everything has no such series.
// Call it once.
func (m *Metrics) SetShard(index, count int) {
	if m == nil {
		return
	}
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dynwatch_shard", Help: "The shard this process is (index of count); 1.",
	}, []string{"index", "count"})
	g.WithLabelValues(strconv.Itoa(index), strconv.Itoa(count)).Set(1)
	m.reg.MustRegister(g)
}

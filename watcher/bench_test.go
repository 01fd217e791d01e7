package watcher

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/rules"
	"github.com/dynwatch/dynwatch/state"
)

// BenchmarkHandle measures what one live update costs from the informer's
// handler to the action queue: rule evaluation, payload, and with state the
// record and the durable queue entry in one transaction. Compare the two
// sub-benchmarks with benchstat for the added cost of state.
func BenchmarkHandle(b *testing.B) {
	file, err := plan.Parse("bench.yaml", []byte(`apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - name: scaled
    resources: [{group: apps, resource: deployments}]
    when: [{path: spec.replicas, op: gt, value: 1}]
    changed: [spec.replicas]
    fields: {replicas: spec.replicas, image: spec.template.spec.containers.0.image}
    actions: [out]
`))
	if err != nil {
		b.Fatal(err)
	}
	res := event.Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}
	key := dyninformer.Key{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}}
	obj := func(rv, replicas int) []byte {
		return fmt.Appendf(nil, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api-%d","namespace":"prod","uid":"u-%d","resourceVersion":"%d","labels":{"app":"api","team":"payments"}},"spec":{"replicas":%d,"selector":{"matchLabels":{"app":"api"}},"template":{"metadata":{"labels":{"app":"api"}},"spec":{"containers":[{"name":"api","image":"registry.local/api:1.2.3","ports":[{"containerPort":8080}],"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],"resources":{"limits":{"cpu":"500m","memory":"256Mi"}}}]}}},"status":{"replicas":%d,"readyReplicas":%d}}`,
			rv%100, rv%100, rv, replicas, replicas, replicas)
	}
	for _, mode := range []string{"state=off", "state=on"} {
		b.Run(mode, func(b *testing.B) {
			opts := Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard}
			if mode == "state=on" {
				s, err := state.Open(filepath.Join(b.TempDir(), "state.db"))
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				opts.Store = s
			}
			w, err := New(file, nil, nil, opts)
			if err != nil {
				b.Fatal(err)
			}
			if w.durable != nil {
				go w.durable.commits.Run()
			}
			p := &pipeline{file: file, log: w.log, clusters: map[string]*clusterIndex{"": {index: map[schema.GroupVersionResource][]*rules.Rule{key.GVR: file.Rules}}}, queues: queueMap(w.acts.queues)}
			w.pipe.Store(p)
			b.ReportAllocs()
			// A counted loop, not b.Loop: the Flush below, which waits for
			// the commits still queued, is part of what is measured.
			b.ResetTimer()
			for i := 1; i <= b.N; i++ {
				ev := &event.Event{Type: event.Update, Resource: res, Object: obj(i+1, 2+i%5), OldObject: obj(i, 1+i%5),
					Namespace: "prod", Name: fmt.Sprint("api-", (i+1)%100), UID: fmt.Sprint("u-", (i+1)%100), ResourceVersion: fmt.Sprint(i + 1), Time: time.Now()}
				w.handle(key, ev)
			}
			if w.durable != nil {
				w.durable.commits.Flush() // what was submitted is on disk before the clock stops
				b.StopTimer()
				w.durable.commits.Close()
			}
			if st := w.Queue("out").Stats(); st.Enqueued == 0 {
				b.Fatal("nothing was enqueued")
			}
		})
	}
}

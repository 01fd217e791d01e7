package payload

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
)

func benchObject(replicas int) []byte {
	return fmt.Appendf(nil, `{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"api","namespace":"prod","uid":"u-1","resourceVersion":"%d","labels":{"app":"api","team":"payments"}},"spec":{"replicas":%d,"selector":{"matchLabels":{"app":"api"}},"template":{"metadata":{"labels":{"app":"api"}},"spec":{"containers":[{"name":"api","image":"registry.local/api:1.2.3","ports":[{"containerPort":8080}],"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],"resources":{"limits":{"cpu":"500m","memory":"256Mi"}}}]}}},"status":{"replicas":%d,"readyReplicas":%d}}`,
		100+replicas, replicas, replicas, replicas)
}

// BenchmarkPayload builds the delivery of one update (redaction, changed
// paths, fields, the JSON encoding), against the same payload encoded by
// encoding/json as a whole:
//
//	go test ./payload -run '^$' -bench BenchmarkPayload -benchmem -count 6 | benchstat -col /impl -
func BenchmarkPayload(b *testing.B) {
	red := NewRedactor(config.DefaultRedact())
	res := event.Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}
	ev := &event.Event{Type: event.Update, Resource: res, Object: benchObject(3), OldObject: benchObject(2),
		Namespace: "prod", Name: "api", UID: "u-1", ResourceVersion: "103", Time: time.Now()}
	fields := []Field{{Name: "replicas", Path: "spec.replicas"}, {Name: "image", Path: "spec.template.spec.containers.0.image"}}
	for _, impl := range []string{"dynwatch", "encoding-json"} {
		b.Run("impl="+impl, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				pl := Build(Prepare(red, ev), "scaled", fields)
				var err error
				if impl == "dynwatch" {
					_, err = Delivery(pl, ev.ObjectKey())
				} else {
					_, err = json.Marshal(pl)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

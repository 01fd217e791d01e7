package health

import (
	"testing"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
)

// benchDeployment is a Deployment as the API server serves it, with the
// fields a controller sets.
var benchDeployment = []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"prod","uid":"7d1f","resourceVersion":"91","generation":4,"labels":{"app":"web"},"annotations":{"deployment.kubernetes.io/revision":"4"}},
"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},"progressDeadlineSeconds":600,"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"registry.example.com/web:4","resources":{"requests":{"cpu":"100m"}}}]}}},
"status":{"observedGeneration":4,"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3,"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","message":"Deployment has minimum availability."},{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable","message":"ReplicaSet \"web-5d8\" has successfully progressed."}]}}`)

func BenchmarkHealth(b *testing.B) {
	res := event.Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment"}
	generic, _ := New(nil)
	own, _ := New([]config.HealthSpec{{Group: "apps", Kind: "Deployment", CEL: `object.status.availableReplicas >= object.spec.replicas ? "Current" : "InProgress"`}})
	for _, bc := range []struct {
		name string
		c    *Checker
	}{{"generic", generic}, {"cel", own}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if h := bc.c.Health(res, benchDeployment); h.Status != Current {
					b.Fatal(h)
				}
			}
		})
	}
}

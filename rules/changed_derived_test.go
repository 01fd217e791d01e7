package rules

import (
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/health"
)

// changed: [health.status] fires on an update whose health's status changed
// (InProgress to Current) and not on one where it stayed; it must not be
// taken and then never fire, as a path of the object that no object has.
// changed: [actor.manager] has no old value to compare (an old state has
// no actor): it is refused.
func TestChangedOnDerivedPaths(t *testing.T) {
	t.Parallel()
	f, err := config.Parse("t.yaml", []byte(`
apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: c, resources: [{kind: Deployment}], changed: [health.status], actions: [out]}
`))
	if err != nil {
		t.Fatal(err)
	}
	rs, ps := Compile(f)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	hc, _ := health.New(nil)
	dep := func(rv string, spec, ready int) []byte {
		n := func(i int) string { return string(rune('0' + i)) }
		return []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"n","uid":"u","resourceVersion":"` + rv + `"},"spec":{"replicas":` + n(spec) + `},` +
			`"status":{"replicas":` + n(ready) + `,"updatedReplicas":` + n(ready) + `,"readyReplicas":` + n(ready) + `,"availableReplicas":` + n(ready) + `,"conditions":[{"type":"Available","status":"True"}]}}`)
	}
	e := &Evaluator{Deriver: hc}
	if ms := e.Evaluate(rs, event.New(event.Update, deploymentRes, dep("3", 1, 1), dep("2", 3, 1), time.Now())); len(ms) != 1 {
		t.Errorf("health InProgress -> Current: fired %d, want changed: [health.status] to fire", len(ms))
	}
	if ms := e.Evaluate(rs, event.New(event.Update, deploymentRes, dep("4", 2, 2), dep("3", 1, 1), time.Now())); len(ms) != 0 {
		t.Errorf("health Current -> Current: fired %d, want none", len(ms))
	}

	f, err = config.Parse("t.yaml", []byte(`
apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: a, resources: [{kind: Deployment}], changed: [actor.manager], actions: [out]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ps := Compile(f); len(ps) == 0 || !strings.Contains(ps[0].Error(), "changed[0]") {
		t.Errorf("changed: [actor.manager] compiled with problems %v, want one at changed[0]", ps)
	}
}

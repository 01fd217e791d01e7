package rules

import (
	"testing"

	"github.com/dynwatch/dynwatch/event"
)

// A condition on actor.manager reads who made the change: a rule that leaves
// out the GitOps controllers fires on a change by hand, not on theirs, nor
// on a change whose actor is not known (a missing path holds for no
// operator but notExists).
func TestActorCondition(t *testing.T) {
	rs := compile(t, `
apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - name: by-hand
    resources: [{kind: ConfigMap}]
    when:
      - {path: actor.manager, op: notIn, value: [argocd-controller, kustomize-controller]}
      - {path: actor.operation, op: ne, value: Apply}
    actions: [out]
`)
	obj := []byte(`{"metadata":{"name":"c"},"data":{"k":"v"}}`)
	for _, tt := range []struct {
		name  string
		actor *event.Actor
		want  bool
	}{
		{"kubectl-patch", &event.Actor{Manager: "kubectl-patch", Operation: "Update"}, true},
		{"argocd", &event.Actor{Manager: "argocd-controller", Operation: "Update"}, false},
		{"a server-side apply", &event.Actor{Manager: "mine", Operation: "Apply"}, false},
		{"not known", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ev := &event.Event{Type: event.Update, Object: obj, OldObject: obj, Actor: tt.actor}
			if got := rs[0].Decide(ev, nil).Fires; got != tt.want {
				t.Errorf("fires %v, want %v", got, tt.want)
			}
		})
	}
}

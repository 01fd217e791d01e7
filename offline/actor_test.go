package offline

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynwatch/dynwatch/plan"
)

// dynwatch test reads an update's actor from the managedFields of its --old
// and --new objects as run does: on a tie within one second, the writer whose
// entry the old object did not hold; a rule reads it as actor.manager, and
// the payload carries it. Objects of another uid are a delete (the old
// object's last writer) and an add (none).
func TestTestActor(t *testing.T) {
	f, err := plan.Parse("c.yaml", []byte(`apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
- name: by-hand
  resources: [{kind: ConfigMap}]
  when: [{path: actor.manager, op: notIn, value: [argocd-controller, kustomize-controller]}]
  actions: [out]
`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, uid, data, managed string) string {
		p := filepath.Join(dir, name)
		doc := `apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  namespace: n
  uid: ` + uid + `
  resourceVersion: "` + name + `"
  managedFields:
` + managed + `data: {k: ` + data + `}
`
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	entry := func(manager, fields string) string {
		return `  - {manager: ` + manager + `, operation: Update, apiVersion: v1, time: "2026-12-01T10:00:09Z", fieldsType: FieldsV1, fieldsV1: ` + fields + `}
`
	}
	argo, kubectl := entry("argocd-controller", `{"f:data":{"f:k":{}}}`), entry("kubectl-edit", `{"f:data":{"f:j":{}}}`)
	run := func(oldPath, newPath string) (string, bool) {
		olds, oldMF, err := ReadObjectsManaged(oldPath)
		if err != nil {
			t.Fatal(err)
		}
		news, newMF, err := ReadObjectsManaged(newPath)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		fired := Test{Rule: f.Rules[0], Redactor: f.Redactor, Old: olds, New: news, OldManaged: oldMF, NewManaged: newMF}.Run(&out)
		return out.String(), fired
	}

	// kubectl-edit wrote within argocd's second: the change is kubectl's,
	// whichever the array lists last.
	out, fired := run(write("1", "u", "a", argo), write("2", "u", "b", kubectl+argo))
	if !fired || !strings.Contains(out, `"manager": "kubectl-edit"`) {
		t.Errorf("kubectl's change within argocd's second: fired %v\n%s", fired, out)
	}
	// argocd changed its fields within kubectl's second: argocd's change,
	// which the rule leaves out.
	out, fired = run(write("3", "u", "a", kubectl+argo), write("4", "u", "b", kubectl+entry("argocd-controller", `{"f:data":{"f:k":{},"f:l":{}}}`)))
	if fired {
		t.Errorf("argocd's change fired:\n%s", out)
	}
	// Another uid: the old object's delete, by its last writer.
	out, _ = run(write("5", "u", "a", kubectl), write("6", "v", "b", argo))
	if !strings.Contains(out, `"type": "delete"`) || !strings.Contains(out, `"manager": "kubectl-edit"`) || strings.Count(out, `"actor"`) != 1 {
		t.Errorf("delete and add:\n%s", out)
	}
}

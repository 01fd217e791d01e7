package dyninformer

import (
	"strings"
	"testing"

	"github.com/dynwatch/dynwatch/event"
)

// mfEntry is a managedFields entry as the API server writes it.
func mfEntry(manager, operation, at, fields, subresource string) string {
	s := `{"manager":"` + manager + `","operation":"` + operation + `","apiVersion":"v1","time":"` + at + `","fieldsType":"FieldsV1","fieldsV1":` + fields
	if subresource != "" {
		s += `,"subresource":"` + subresource + `"`
	}
	return s + "}"
}

func mfObject(t *testing.T, rv string, entries ...string) *Object {
	t.Helper()
	o, err := parseObject([]byte(`{"metadata":{"name":"c","namespace":"n","uid":"u","resourceVersion":"`+rv+`","managedFields":[`+
		strings.Join(entries, ",")+`]},"data":{"time":"2030-01-01T00:00:00Z"}}`), "ConfigMap", "v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// The actor of a change is its latest managedFields entry; on a tie within
// one second, the entry the old state did not hold as it is.
func TestChangeActor(t *testing.T) {
	t.Parallel()
	const t5, t9 = "2026-12-01T10:00:05Z", "2026-12-01T10:00:09Z"
	data, labels := `{"f:data":{"f:a":{}}}`, `{"f:metadata":{"f:labels":{"f:x":{}}}}`
	status := mfEntry("kube-controller-manager", "Update", t9, `{"f:status":{"f:replicas":{}}}`, "status")
	for _, tt := range []struct {
		name     string
		old, cur []string // nil old: a delete of cur
		want     event.Actor
	}{{
		name: "latest",
		old:  []string{mfEntry("a", "Update", t5, data, "")},
		cur:  []string{mfEntry("a", "Update", t5, data, ""), mfEntry("b", "Apply", t9, labels, ""), mfEntry("c", "Update", "2026-12-01T09:59:59Z", data, "")},
		want: event.Actor{Manager: "b", Operation: "Apply", Time: t9},
	}, {
		name: "tie: the new writer of the second",
		old:  []string{mfEntry("a", "Update", t9, data, "")},
		cur:  []string{mfEntry("a", "Update", t9, data, ""), mfEntry("b", "Update", t9, labels, "")},
		want: event.Actor{Manager: "b", Operation: "Update", Time: t9},
	}, {
		name: "tie: the writer listed first",
		old:  []string{mfEntry("b", "Update", t9, labels, "")},
		cur:  []string{mfEntry("a", "Update", t9, data, ""), mfEntry("b", "Update", t9, labels, "")},
		want: event.Actor{Manager: "a", Operation: "Update", Time: t9},
	}, {
		name: "tie: a writer whose fields changed within the second",
		old:  []string{mfEntry("a", "Update", t9, data, ""), mfEntry("b", "Update", t9, labels, "")},
		cur:  []string{mfEntry("a", "Update", t9, `{"f:data":{"f:a":{},"f:b":{}}}`, ""), mfEntry("b", "Update", t9, labels, "")},
		want: event.Actor{Manager: "a", Operation: "Update", Time: t9},
	}, {
		name: "tie: an older writer now at the second",
		old:  []string{mfEntry("a", "Update", t5, data, ""), mfEntry("b", "Update", t9, labels, "")},
		cur:  []string{mfEntry("a", "Update", t9, data, ""), mfEntry("b", "Update", t9, labels, "")},
		want: event.Actor{Manager: "a", Operation: "Update", Time: t9},
	}, {
		name: "the status subresource",
		old:  []string{mfEntry("kubectl", "Update", t5, data, "")},
		cur:  []string{mfEntry("kubectl", "Update", t5, data, ""), status},
		want: event.Actor{Manager: "kube-controller-manager", Operation: "Update", Subresource: "status", Time: t9},
	}, {
		name: "a delete: the last writer",
		cur:  []string{mfEntry("a", "Update", t5, data, ""), status},
		want: event.Actor{Manager: "kube-controller-manager", Operation: "Update", Subresource: "status", Time: t9},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			cur := mfObject(t, "2", tt.cur...)
			var old *Object
			oldMF := []byte(nil)
			if tt.old != nil {
				old = mfObject(t, "1", tt.old...)
				oldMF = []byte("[" + strings.Join(tt.old, ",") + "]")
			}
			if got := cur.changeActor(old); got == nil || *got != tt.want {
				t.Errorf("informer: actor %+v, want %+v", got, tt.want)
			}
			// dynwatch test's: the same choice from the arrays.
			if got := ChangeActor([]byte("["+strings.Join(tt.cur, ",")+"]"), oldMF); got == nil || *got != tt.want {
				t.Errorf("ChangeActor: %+v, want %+v", got, tt.want)
			}
			// An array not as the API server writes it (spaces, keys in
			// another order) is read by the scanner to the same choice.
			spaced := func(es []string) []byte {
				if es == nil {
					return nil
				}
				var r []string
				for _, e := range es {
					r = append(r, strings.Replace(strings.ReplaceAll(e, `":`, `": `), `{"manager":`, `{"fieldsType":"FieldsV1","manager":`, 1))
				}
				return []byte("[ " + strings.Join(r, ", ") + " ]")
			}
			if got := ChangeActor(spaced(tt.cur), spaced(tt.old)); got == nil || *got != tt.want {
				t.Errorf("ChangeActor, another encoding: %+v, want %+v", got, tt.want)
			}
		})
	}
}

// An object without managedFields has no actor; writers are interned, so
// that the objects one manager wrote last share its names.
func TestChangeActorNone(t *testing.T) {
	t.Parallel()
	none, err := parseObject([]byte(`{"metadata":{"name":"c","uid":"u","resourceVersion":"1"}}`), "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := none.changeActor(nil); a != nil {
		t.Errorf("without managedFields: actor %+v", a)
	}
	e := mfEntry("shared-manager", "Update", "2026-12-01T10:00:05Z", `{}`, "")
	if a, b := mfObject(t, "1", e), mfObject(t, "2", e); a.by != b.by || a.by == nil {
		t.Errorf("writers not shared: %p %p", a.by, b.by)
	}
}

// A delete after an update that broke a tie names the writer that update
// chose, not the one the server lists last: the state before is gone then.
func TestChangeActorDeleteAfterTie(t *testing.T) {
	t.Parallel()
	const t9 = "2026-12-01T10:00:09Z"
	zz, aa := mfEntry("zz-writer", "Update", t9, `{"f:data":{"f:zz":{}}}`, ""), mfEntry("aa-writer", "Update", t9, `{"f:data":{"f:aa":{}}}`, "")
	old, cur := mfObject(t, "1", zz), mfObject(t, "2", aa, zz)
	if a := cur.changeActor(old); a == nil || a.Manager != "aa-writer" {
		t.Fatalf("update: actor %+v, want aa-writer", a)
	}
	if a := cur.changeActor(nil); a == nil || a.Manager != "aa-writer" {
		t.Errorf("delete: actor %+v, want aa-writer", a)
	}
}

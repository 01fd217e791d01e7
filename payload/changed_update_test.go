package payload

import (
	"bytes"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// A live update's payload says what changed, as an empty list when only the
// resourceVersion (or managedFields) moved; an add's and a delete's have no
// "changed" at all.
func TestChangedIsOnEveryLiveUpdate(t *testing.T) {
	t.Parallel()
	res := event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	old := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u","resourceVersion":"1"},"data":{"k":"v"}}`)
	same := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u","resourceVersion":"2"},"data":{"k":"v"}}`)
	moved := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u","resourceVersion":"3"},"data":{"k":"w"}}`)
	payloadOf := func(typ event.Type, obj, oldObj []byte) []byte {
		t.Helper()
		d, err := Delivery(Build(Prepare(nil, event.New(typ, res, obj, oldObj, time.Unix(0, 0))), "r", nil), "k")
		if err != nil {
			t.Fatal(err)
		}
		return d.JSON
	}
	for _, tc := range []struct {
		name     string
		json     []byte
		want     string
		mustLack bool
	}{
		{"an update that changed nothing", payloadOf(event.Update, same, old), `"changed":[]`, false},
		{"an update", payloadOf(event.Update, moved, old), `"changed":["data.k"]`, false},
		{"an add", payloadOf(event.Add, old, nil), `"changed"`, true},
		{"a delete", payloadOf(event.Delete, old, nil), `"changed"`, true},
	} {
		if has := bytes.Contains(tc.json, []byte(tc.want)); has == tc.mustLack {
			t.Errorf("%s: has %s = %v:\n%s", tc.name, tc.want, has, tc.json)
		}
	}
}

package payload

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// TestDeliveryEncodesAsMarshalDoes: the payload's bytes are exactly what
// encoding/json makes of it, though the objects are appended as they are.
func TestDeliveryEncodesAsMarshalDoes(t *testing.T) {
	obj := json.RawMessage(`{"kind":"ConfigMap","metadata":{"name":"a<b>&c","annotations":{"x":"\u2028 é \"q\""}},"data":{"k":[1,2.5,true,null]}}`)
	for name, pl := range map[string]*event.Payload{
		"add":    {ID: "u:1:add", Type: event.Add, Rule: "r<1>", Name: "a", Object: obj},
		"update": {ID: "u:2:update", Type: event.Update, Rule: "r", Changed: []string{"data.k"}, Fields: map[string]json.RawMessage{"k": json.RawMessage(`[1]`)}, Transition: "enter", Object: obj, OldObject: obj},
		"none":   {ID: "u:3:delete", Type: event.Delete},
	} {
		want, err := Marshal(pl)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Delivery(pl, "k")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(d.JSON, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, d.JSON, want)
		}
	}
}

// An update's and a delete's payload say who made the change, as the event
// does; an add's does not (SPEC §4).
func TestBuildActor(t *testing.T) {
	actor := &event.Actor{Manager: "kubectl-patch", Operation: "Update", Time: "2026-12-01T10:00:09Z"}
	for _, tt := range []struct {
		typ  event.Type
		want bool
	}{{event.Update, true}, {event.Delete, true}, {event.Add, false}} {
		ev := event.New(tt.typ, event.Resource{Version: "v1", Resource: "configmaps"}, []byte(`{"metadata":{"name":"c","uid":"u","resourceVersion":"2"}}`), nil, time.Now())
		ev.Actor = actor
		pl := Build(Prepare(nil, ev), "r", nil)
		if got := pl.Actor != nil; got != tt.want {
			t.Errorf("%s: actor in the payload %v, want %v", tt.typ, got, tt.want)
		}
		d, err := Delivery(pl, "k")
		if err != nil {
			t.Fatal(err)
		}
		want := `"actor":{"manager":"kubectl-patch","operation":"Update","time":"2026-12-01T10:00:09Z"}`
		if got := bytes.Contains(d.JSON, []byte(want)); got != tt.want {
			t.Errorf("%s: %s", tt.typ, d.JSON)
		}
	}
}

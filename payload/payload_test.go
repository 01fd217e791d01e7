package payload

import (
	"bytes"
	"encoding/json"
	"testing"

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

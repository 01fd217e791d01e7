package action

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// On NATS, binary mode maps every attribute to a ce- header, datacontenttype
// included (ce-datacontenttype: the NATS binding does not read Content-Type
// as it), and percent-encodes what is not printable ASCII, space, '"' and '%'.
func TestNATSCloudEventsBindingHeaders(t *testing.T) {
	t.Parallel()
	ns := startNATS(t)
	ns.stream(t)
	s := buildAction(t, fmt.Sprintf(`nats: {url: %q, subject: dw.events, format: cloudevents}`, ns.url()))
	d := cmDelivery("a", 0)
	d.Payload.Rule = `règle "1" 100%`
	d.JSON, _ = json.Marshal(d.Payload)
	if err := s.Send(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	m := streamMsgs(t, ns)[0]
	want := map[string]string{
		"ce-datacontenttype": "application/json",
		"ce-dynwatchrule":    "r%C3%A8gle%20%221%22%20100%25",
	}
	for k, v := range want {
		if got := m.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
}

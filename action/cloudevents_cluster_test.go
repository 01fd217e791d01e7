package action

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// With clusters, an event's CloudEvents source is its cluster's name, in
// both modes; without, the source the action was built with.
func TestCloudEventsSourceIsTheCluster(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, cluster, want string
	}{
		{"one cluster", "", testSource},
		{"named cluster", "east", "east"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, got := formatRecorder(t, nil)
			structured := buildAction(t, fmt.Sprintf(`webhook: {url: %q, format: cloudevents}`, srv.URL))
			binary := buildAction(t, fmt.Sprintf(`webhook: {url: %q, format: cloudevents, cloudevents: {mode: binary}}`, srv.URL))
			d := cmDelivery("a", 0)
			d.Payload.Cluster = tc.cluster
			d.JSON, _ = json.Marshal(d.Payload)
			for _, s := range []Sender{structured, binary} {
				if err := s.Send(context.Background(), d); err != nil {
					t.Fatal(err)
				}
			}
			reqs := got()
			var ev struct{ Source string }
			if err := json.Unmarshal(reqs[0].body, &ev); err != nil || ev.Source != tc.want {
				t.Errorf("structured source = %q (%v), want %q", ev.Source, err, tc.want)
			}
			if g := reqs[1].header.Get("Ce-Source"); g != tc.want {
				t.Errorf("binary Ce-Source = %q, want %q", g, tc.want)
			}
		})
	}
}

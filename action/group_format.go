package action

import (
	"github.com/dynwatch/dynwatch/event"
)

// How every sink sees a grouped delivery (event.Delivery.Group): its JSON is
// the group payload {"group", "count", "events"}, sent as it is by log, exec,
// webhook, kafka and nats; body templates read that object; chat formats sum
// it up in one message; CloudEvents of it have type io.dynwatch.group. What
// routes a delivery (a topic, subject or kafka key template) reads its first
// event, so that a grouped action routes as the same action ungrouped would
// route that event; the default kafka key (key: object) is the group's labels,
// so that one group's deliveries share a partition, in order.

// ceGroupType is the CloudEvents type of a grouped delivery.
const ceGroupType = ceTypePrefix + "group"

// DeliveryID is the single key of d wherever one is needed (the CloudEvents
// id, X-Dynwatch-Delivery-Id, JetStream's Nats-Msg-Id, the kafka
// dynwatch-delivery-id header): DeliveryKey of its payload, or for a grouped
// delivery its first event's plus ":group".
func DeliveryID(d *event.Delivery) string {
	if d.Group != nil {
		return DeliveryKey(d.Payload) + ":group"
	}
	return DeliveryKey(d.Payload)
}

// routeJSON is the JSON that routing templates of d read: its first event's.
func routeJSON(d *event.Delivery) []byte {
	if d.Group != nil && len(d.Members) > 0 {
		return d.Members[0].JSON
	}
	return d.JSON
}

// groupRule is the rule all of g's events share, or "" when they are of
// several rules.
func groupRule(g *event.GroupPayload) string {
	if len(g.Events) == 0 {
		return ""
	}
	r := g.Events[0].Rule
	for _, p := range g.Events[1:] {
		if p.Rule != r {
			return ""
		}
	}
	return r
}

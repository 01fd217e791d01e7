package action

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

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
// id, X-Dynwatch-Delivery-Id, the kafka dynwatch-delivery-id header, and
// JetStream's Nats-Msg-Id before its action): DeliveryKey of its payload, or
// for a grouped delivery the key of its members (groupKey). One key names
// one content: a retry keeps it, and a group formed again with other
// members (after a restart, a reload or a late acknowledgement) has another,
// so that a receiver that drops what it has seen never drops new events.
func DeliveryID(d *event.Delivery) string {
	if d.Group != nil {
		return groupKey(d.Payload, d.Group.Events)
	}
	return DeliveryKey(d.Payload)
}

// groupDigestLen is how many hex digits of the SHA-256 a group's key keeps:
// 48 bits, for groups that share their first event and their size.
const groupDigestLen = 12

// groupKey is the key of a group of events, first the first of them:
// <first event's key>:group:<n>:<digest>, n the number of events and digest
// the first groupDigestLen hex digits of the SHA-256 of every event's key,
// in order, joined by newlines. The first event's key says where the group
// starts to a reader; n and the digest tell apart the groups that start
// there.
func groupKey(first *event.Payload, events []*event.Payload) string {
	h := sha256.New()
	for i, p := range events {
		if i > 0 {
			h.Write([]byte{'\n'})
		}
		h.Write([]byte(DeliveryKey(p)))
	}
	sum := hex.EncodeToString(h.Sum(nil))
	return DeliveryKey(first) + ":group:" + strconv.Itoa(len(events)) + ":" + sum[:groupDigestLen]
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

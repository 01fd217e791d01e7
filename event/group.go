package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// GroupPayload is what a grouped delivery carries: the group's labels (the
// values of the action's group.by), how many events it holds and the events'
// payloads, in the order they were seen.
type GroupPayload struct {
	Group  map[string]string `json:"group"`
	Count  int               `json:"count"`
	Events []*Payload        `json:"events"`
}

// NewGroupDelivery returns the one delivery of members grouped under labels.
// Its JSON is {"group": labels, "count": N, "events": [...]}, each event the
// member's own JSON as it is (not encoded again, so a receiver sees the
// bytes an ungrouped delivery would have); its Payload and Key are the first
// member's, so that what a sink says about "the event" (a log line's rule, a
// routing template) names the group's first one. The group's delivery key
// is not its first member's: it names every member (action.DeliveryID).
func NewGroupDelivery(labels map[string]string, members []*Delivery) (*Delivery, error) {
	if len(members) == 0 {
		return nil, errors.New("group delivery: no members")
	}
	if labels == nil {
		labels = map[string]string{}
	}
	lj, err := json.Marshal(labels)
	if err != nil {
		return nil, fmt.Errorf("group delivery: labels: %w", err)
	}
	size := len(lj) + 40
	for _, m := range members {
		size += len(m.JSON) + 1
	}
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(`{"group":`)
	b.Write(lj)
	b.WriteString(`,"count":`)
	b.WriteString(strconv.Itoa(len(members)))
	b.WriteString(`,"events":[`)
	events := make([]*Payload, len(members))
	for i, m := range members {
		if len(m.JSON) == 0 {
			return nil, fmt.Errorf("group delivery: member %d (%s) has no JSON", i, m.Key)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(m.JSON)
		events[i] = m.Payload
	}
	b.WriteString(`]}`)
	return &Delivery{
		Payload: members[0].Payload,
		JSON:    b.Bytes(),
		Key:     members[0].Key,
		Group:   &GroupPayload{Group: labels, Count: len(members), Events: events},
		Members: members,
	}, nil
}

// GroupLabels returns the values of the labels by for p: rule, namespace,
// name, kind, resource (resource.group, as kubectl spells it), cluster, type
// and transition. A label the payload has no value for (cluster outside a
// multi-cluster config, transition of fire: always) is "", and so is one
// that is not a label (config rejects those).
func GroupLabels(by []string, p *Payload) map[string]string {
	out := make(map[string]string, len(by))
	for _, l := range by {
		out[l] = groupLabel(l, p)
	}
	return out
}

func groupLabel(l string, p *Payload) string {
	switch l {
	case "rule":
		return p.Rule
	case "namespace":
		return p.Namespace
	case "name":
		return p.Name
	case "kind":
		return p.Resource.Kind
	case "resource":
		return p.Resource.Name()
	case "type":
		return string(p.Type)
	case "transition":
		return p.Transition
	case "cluster":
		return p.Cluster // "" without clusters
	}
	return ""
}

// GroupLabel is the value of the one label l for p, as GroupLabels gives it:
// for a queue that names a group by its values without building the map.
func GroupLabel(l string, p *Payload) string { return groupLabel(l, p) }

// Package event holds the two shapes an event takes on its way through dynwatch:
// Event, what an informer saw (objects as JSON bytes), and Payload, what an action
// delivers.
//
// It is the vocabulary every other package shares, so it imports no dynwatch
// package.
package event

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
)

// Type is the kind of change: add, update or delete.
type Type string

// The event types.
const (
	Add    Type = "add"
	Update Type = "update"
	Delete Type = "delete"
)

// Resource names the resource an object belongs to, as it appears in a payload.
type Resource struct {
	Group      string `json:"group"`
	Version    string `json:"version"`
	Resource   string `json:"resource"`
	Kind       string `json:"kind"`
	Namespaced bool   `json:"namespaced"`
}

// String returns resource.version.group, as kubectl spells it ("configmaps.v1"
// for the core group).
func (r Resource) String() string {
	if r.Group == "" {
		return r.Resource + "." + r.Version
	}
	return r.Resource + "." + r.Version + "." + r.Group
}

// Name spells the resource as kubectl accepts it: resource.group, or the
// resource alone for the core group.
func (r Resource) Name() string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// Origin is where an event came from. Whether a rule fires on it depends on
// the origin and the rule's onStart (see rules.Rule.Decide).
type Origin uint8

// The origins of an event.
const (
	// Live: a change seen by a running watch, or an object of a resource that
	// appeared while dynwatch runs (all of it is new).
	Live Origin = iota
	// InitialList: an add from the initial list of a watch started with
	// dynwatch or by a reload: the object existed before; onStart decides.
	InitialList
	// Relist: an add from the initial list of a watch that replaced one on
	// another version of the same resource: nothing in it is new.
	Relist
	// Replay: reconstructed from restart state (onStart: diff).
	Replay
)

var originNames = [...]string{Live: "live", InitialList: "initial list", Relist: "relist", Replay: "replay"}

func (o Origin) String() string {
	if int(o) < len(originNames) {
		return originNames[o]
	}
	return "unknown"
}

// New returns the event of an object given as JSON bytes, its identity read
// from the bytes' metadata: the one constructor of an Event from an object.
func New(t Type, res Resource, obj, old []byte, now time.Time) *Event {
	m := gjson.GetManyBytes(obj, "metadata.namespace", "metadata.name", "metadata.uid", "metadata.resourceVersion")
	return &Event{
		Type:            t,
		Resource:        res,
		Object:          obj,
		OldObject:       old,
		Namespace:       m[0].Str,
		Name:            m[1].Str,
		UID:             m[2].Str,
		ResourceVersion: m[3].Str,
		Time:            now,
	}
}

// Event is one change to one object as an informer saw it. Objects travel as JSON
// bytes, encoded once per event, so that every rule reads them with gjson without
// decoding them again.
type Event struct {
	Type     Type
	Resource Resource
	// Object is the new state; on delete, the last known state.
	Object []byte
	// OldObject is the previous state on updates, nil otherwise.
	OldObject []byte

	Namespace       string
	Name            string
	UID             string
	ResourceVersion string

	// Origin says where the event came from: a live change, the initial list
	// of a watch, a relist after a version move, or restart state.
	Origin Origin
	// Epoch tells initial lists of informers started by different changes of
	// the watched set apart (0: those started with dynwatch), so that a reload
	// can let only the rules it added fire on them.
	Epoch uint64
	// Recorded, on replayed updates, is what was recorded before the restart
	// at every path the rules read: all that is known of the old state.
	// OldObject then holds those values that a plain path can rebuild.
	Recorded Recorded
	// Time is when dynwatch saw the event.
	Time time.Time
	// Modified is when the object was last changed, the latest time of its
	// managedFields (the API server's clock, to the second), read by the
	// informers' decoder before it cuts them out; zero when unknown. A
	// reshard compares it with an old shard's end.
	Modified time.Time
	// Cluster names the cluster the event comes from, with several
	// clusters; "" is the one cluster.
	Cluster string
	// Actor is who made the change, from the managedFields entry of the
	// change (read by the informers' decoder before it cuts them out); nil
	// when unknown.
	Actor *Actor
	// Timed is set on an event a rule's timer made (for, keepFiringFor, a
	// time condition): no change of the object, its state re-evaluated at
	// Due (the object as the cache holds it then).
	Timed *Timed
	// Deriver computes the values an object has beyond its bytes (its
	// health); nil: they are missing. See Get.
	Deriver Deriver

	dec *decoded // see Decoded
}

// ID is the event's id: stable across restarts and replicas, so receivers can
// drop duplicates. It is <uid>:<resourceVersion>:<type>, and for a timer's
// event <uid>:<resourceVersion>:timer@<Due in Unix nanoseconds>: one id per
// wait that fell due, the same however often it is evaluated again (a
// restart before it was delivered, another replica). Not seconds: two
// timers of one rule on one object may fall due within a second with no
// event between them (an enter, then an exit), and must not share a key.
func (e *Event) ID() string {
	if e.Timed != nil {
		return e.UID + ":" + e.ResourceVersion + ":timer@" + strconv.FormatInt(e.Timed.Due.UnixNano(), 10)
	}
	return e.UID + ":" + e.ResourceVersion + ":" + string(e.Type)
}

// IsReplay reports whether the event was reconstructed from restart state.
func (e *Event) IsReplay() bool { return e.Origin == Replay }

// ObjectKey identifies the object across events, for per-object ordering:
// group/resource/namespace/name, after "CLUSTER:" for a named cluster. The
// version is not part of it: after a watch moves to another version of the
// resource, an object's new events still queue behind its backlog.
func (e *Event) ObjectKey() string {
	k := e.Resource.Group + "/" + e.Resource.Resource + "/" + e.Namespace + "/" + e.Name
	if e.Cluster != "" {
		k = e.Cluster + ":" + k
	}
	return k
}

// Payload is the event as actions deliver it.
type Payload struct {
	ID              string                     `json:"id"`
	Time            string                     `json:"time"`
	Type            Type                       `json:"type"`
	Replay          bool                       `json:"replay"`
	Rule            string                     `json:"rule"`
	Resource        Resource                   `json:"resource"`
	Namespace       string                     `json:"namespace"`
	Name            string                     `json:"name"`
	UID             string                     `json:"uid"`
	ResourceVersion string                     `json:"resourceVersion"`
	Fields          map[string]json.RawMessage `json:"fields,omitempty"`
	// Transition is enter or exit, for rules with fire: edges.
	Transition string `json:"transition,omitempty"`
	// Since is when a timed rule's conditions started holding (a timed
	// enter) or stopped holding (a timed exit).
	Since string `json:"since,omitempty"`
	// Late says a timed firing fell due while dynwatch was down, at Due.
	Late bool   `json:"late,omitempty"`
	Due  string `json:"due,omitempty"`
	// Actor is who made the change (updates and deletes).
	Actor *Actor `json:"actor,omitempty"`
	// Health is the object's health, when a rule reads it.
	Health *Health `json:"health,omitempty"`
	// Changed is set on a live update, if only to an empty list (omitzero
	// omits nil only); nil on adds and deletes, and on a replayed update
	// whose recorded paths did not change.
	Changed   []string        `json:"changed,omitzero"`
	Object    json.RawMessage `json:"object"`
	OldObject json.RawMessage `json:"oldObject,omitempty"`
	// Cluster names the event's cluster, only with several clusters.
	Cluster string `json:"cluster,omitempty"`
}

// TimeFormat is the payload's time format: RFC 3339 in UTC with milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Delivery is one payload on its way to one action's queue. The JSON encoding is
// made once and shared by every action of the rule.
type Delivery struct {
	Payload *Payload
	JSON    []byte
	// Key orders deliveries: those with one key are delivered in order.
	Key string
	// Seq is the delivery's place in its action's durable queue (0 without state).
	Seq uint64
	// Group is set on a grouped delivery (NewGroupDelivery): JSON is then the
	// group's encoding, Payload and Key its first member's.
	Group *GroupPayload
	// Members are a grouped delivery's member deliveries, in order, each
	// with its Seq; nil for one event's delivery.
	Members []*Delivery
}

// Actor is who made a change: the managedFields entry of the change. There is
// no user name in it (that is in the API server's audit log).
type Actor struct {
	Manager     string `json:"manager"`
	Operation   string `json:"operation"`
	Subresource string `json:"subresource,omitempty"`
	Time        string `json:"time,omitempty"`
}

// Health is an object's health as kstatus computes it: Current, InProgress,
// Failed, Terminating or Unknown, with a message.
type Health struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// Deriver computes the values an object has beyond its bytes, read by rules
// as the paths under "health." (health.Checker).
type Deriver interface {
	// Health returns the health of obj, an object of res.
	Health(res Resource, obj []byte) Health
}

// Timed is what a timer knows of the firing it made.
type Timed struct {
	// Rule is the rule whose timer it is: the only rule the event is
	// evaluated for.
	Rule string
	// Due is when the timer fell due.
	Due time.Time
	// Late says it fell due while dynwatch was down.
	Late bool
}

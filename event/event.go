// Package event holds the two shapes an event takes on its way through dynwatch:
// Event, what an informer saw (objects as JSON bytes), and Payload, what an action
// delivers (SPEC §4).
package event

import (
	"encoding/json"
	"time"
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

	// Initial is set on adds that come from the initial list of an informer that
	// was started with dynwatch (onStart decides whether they fire).
	Initial bool
	// Epoch tells Initial events of informers started by different changes of
	// the watched set apart (0: those started with dynwatch), so that a reload
	// can let only the rules it added fire on them.
	Epoch uint64
	// Relisted is set on adds from the initial list of an informer that
	// replaced a watch on another version of the same resource: nothing in it
	// is new, so no rule fires on it.
	Relisted bool
	// Replay is set on events reconstructed from restart state.
	Replay bool
	// OldPaths, on replayed updates, are the only paths OldObject holds: the
	// values recorded before the restart, not the whole old object.
	OldPaths []string
	// Time is when dynwatch saw the event.
	Time time.Time
}

// ID is the event's id: stable across restarts and replicas, so receivers can
// drop duplicates.
func (e *Event) ID() string {
	return e.UID + ":" + e.ResourceVersion + ":" + string(e.Type)
}

// ObjectKey identifies the object across events, for per-object ordering.
func (e *Event) ObjectKey() string {
	return e.Resource.String() + "/" + e.Namespace + "/" + e.Name
}

// Payload is the event as actions deliver it (SPEC §4).
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
	Changed         []string                   `json:"changed,omitempty"`
	Object          json.RawMessage            `json:"object"`
	OldObject       json.RawMessage            `json:"oldObject,omitempty"`
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
}

package event

import (
	"encoding/json"

	"github.com/tidwall/gjson"
)

// decoded caches the event's objects decoded from JSON, for the conditions
// that need them (CEL): decoded once per event however many rules read them.
type decoded struct {
	obj, old       any
	objSrc, oldSrc []byte
	objOK, oldOK   bool
	n              int
	views          [2]*Event // see View
	// paths caches gjson lookups of the object [0] and the old object [1], so
	// that rules reading one path share one scan.
	paths [2]pathCache
	// derived caches the derived documents (see Get) of the object [0] and
	// the old object [1].
	derived [2]derivedDocs
}

// derivedDocs are an object's derived documents, encoded once.
type derivedDocs struct {
	src           []byte
	health, actor []byte
	hasHealth     bool
	healthOf      Health // what health encodes, for HealthOf
}

// pathCache holds the lookups of one document: the first few in an array (no
// allocation for an event that few conditions read), the rest in a map.
type pathCache struct {
	src   []byte // the document the lookups are of
	small [4]pathResult
	n     int
	more  map[string]gjson.Result
}

type pathResult struct {
	path string
	r    gjson.Result
}

func (c *pathCache) get(doc []byte, path string) gjson.Result {
	if !sameBytes(c.src, doc) {
		*c = pathCache{src: doc}
	}
	for i := range c.n {
		if c.small[i].path == path {
			return c.small[i].r
		}
	}
	if r, ok := c.more[path]; ok {
		return r
	}
	r := gjson.GetBytes(doc, path)
	if c.n < len(c.small) {
		c.small[c.n] = pathResult{path, r}
		c.n++
		return r
	}
	if c.more == nil {
		c.more = map[string]gjson.Result{}
	}
	c.more[path] = r
	return r
}

func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Decoded returns the event's object and old object decoded from JSON (nil
// where there is none, or it does not decode). The result is cached on the
// event, so that every rule that needs it shares one decode; a copy of the
// event with other objects decodes those. Not safe for concurrent use: an
// event is evaluated by one goroutine at a time.
func (e *Event) Decoded() (obj, old any) {
	if e.dec == nil {
		e.dec = &decoded{}
	}
	d := e.dec
	if !d.objOK || !sameBytes(d.objSrc, e.Object) {
		d.obj, d.objSrc, d.objOK = decode(e.Object, &d.n), e.Object, true
	}
	if !d.oldOK || !sameBytes(d.oldSrc, e.OldObject) {
		d.old, d.oldSrc, d.oldOK = decode(e.OldObject, &d.n), e.OldObject, true
	}
	return d.obj, d.old
}

// Decodes returns how many objects of the event were decoded so far, for
// tests and benchmarks of the one-decode-per-event promise.
func (e *Event) Decodes() int {
	if e.dec == nil {
		return 0
	}
	return e.dec.n
}

func decode(b []byte, n *int) any {
	if b == nil {
		return nil
	}
	*n++
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	return v
}

// View returns the event as if its object were the old object (old) or the
// object (!old) alone, with no old object: what transitions evaluate a rule's
// conditions on, before and after. Views are cached on the event, so that
// every rule shares their decodes.
func (e *Event) View(old bool) *Event {
	if e.dec == nil {
		e.dec = &decoded{}
	}
	i, doc := 0, e.Object
	if old {
		i, doc = 1, e.OldObject
	}
	if v := e.dec.views[i]; v != nil && sameBytes(v.Object, doc) {
		return v
	}
	v := &Event{Type: e.Type, Resource: e.Resource, Namespace: e.Namespace, Name: e.Name, UID: e.UID,
		ResourceVersion: e.ResourceVersion, Object: doc, Time: e.Time, Deriver: e.Deriver}
	if !old {
		v.Actor = e.Actor
	}
	e.dec.views[i] = v
	return v
}

// Get returns gjson's value at path in the object (old: the old object),
// looked up once per event and path however many conditions read it. Paths
// under "health." and "actor." read what dynwatch derives of the object
// rather than the object (DerivedRoot).
func (e *Event) Get(old bool, path string) gjson.Result {
	if root, rest, ok := DerivedRoot(path); ok {
		return gjson.GetBytes(e.derivedDoc(old, root), rest)
	}
	doc, i := e.Object, 0
	if old {
		doc, i = e.OldObject, 1
	}
	if doc == nil {
		return gjson.Result{}
	}
	if e.dec == nil {
		e.dec = &decoded{}
	}
	return e.dec.paths[i].get(doc, path)
}

// The roots of the paths that read what dynwatch derives of an object, not
// the object: its health ({"status", "message"}) and who made the change
// ({"manager", "operation", "subresource", "time"}).
const (
	HealthRoot = "health"
	ActorRoot  = "actor"
)

// DerivedRoot splits a path under a derived root ("health.status": health,
// "status"); ok is false for an object path.
func DerivedRoot(path string) (root, rest string, ok bool) {
	for _, r := range [...]string{HealthRoot, ActorRoot} {
		if len(path) > len(r) && path[:len(r)] == r && path[len(r)] == '.' {
			return r, path[len(r)+1:], true
		}
	}
	return "", "", false
}

// derivedDoc returns the JSON of the derived root of the object (old: the
// old object): its health, through the event's Deriver, or the event's
// actor (the new object's only). nil when there is none.
func (e *Event) derivedDoc(old bool, root string) []byte {
	doc, i := e.Object, 0
	if old {
		doc, i = e.OldObject, 1
	}
	if doc == nil {
		return nil
	}
	if e.dec == nil {
		e.dec = &decoded{}
	}
	d := &e.dec.derived[i]
	if !sameBytes(d.src, doc) {
		*d = derivedDocs{src: doc}
	}
	switch root {
	case HealthRoot:
		if !d.hasHealth && e.Deriver != nil {
			d.healthOf = e.Deriver.Health(e.Resource, doc)
			d.health, _ = json.Marshal(d.healthOf)
			d.hasHealth = true
		}
		return d.health
	case ActorRoot:
		if d.actor == nil && !old && e.Actor != nil {
			d.actor, _ = json.Marshal(e.Actor)
		}
		return d.actor
	}
	return nil
}

// HealthOf returns the object's health (old: the old object's) through the
// event's Deriver; nil without one.
func (e *Event) HealthOf(old bool) *Health {
	if e.derivedDoc(old, HealthRoot) == nil {
		return nil
	}
	h := e.dec.derived[0].healthOf
	if old {
		h = e.dec.derived[1].healthOf
	}
	return &h
}

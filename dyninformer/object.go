package dyninformer

import (
	"encoding/json"
	"errors"
	"strings"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidwall/gjson"
)

// Object is one object as the informer cache keeps it: its JSON bytes as the
// API server sent them, managedFields cut out, and the few metadata fields the
// cache needs, read from those bytes. It is never decoded into maps unless a
// caller asks for that (Unstructured).
//
// An Object is read-only: its bytes are shared by the cache and every event
// made from it. The metav1.Object setters panic; decode a copy with
// Unstructured to change it.
type Object struct {
	raw                                   []byte
	name, namespace, uid, resourceVersion string
	// modified is the latest time of its managedFields (Unix seconds, the
	// API server's clock; 0: none), read before they are cut out: when it
	// was last changed (see event.Event.Modified).
	modified int64
	// by and byHash are the stamps of its latest managedFields entries, the
	// only ones a newer state's can tie with (see actor.go): by is the
	// interned writer of the one entry and byHash its hash, or with several
	// entries of that time, a writer of the object's own holding them.
	by     *writer
	byHash uint64
}

// JSON returns the object's JSON bytes (managedFields cut out). They must not
// be modified.
func (o *Object) JSON() []byte { return o.raw }

// Unstructured decodes the object; every call decodes anew, so the caller owns
// the result.
func (o *Object) Unstructured() (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(o.raw); err != nil {
		return nil, err
	}
	return u, nil
}

// GetObjectKind is part of runtime.Object; the kind stays in the bytes.
func (o *Object) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject returns a copy sharing the immutable bytes.
func (o *Object) DeepCopyObject() runtime.Object { c := *o; return &c }

// The metav1.Object getters the cache, the reflector and the key functions call
// are fields; the rest read the bytes on each call.

func (o *Object) GetName() string            { return o.name }
func (o *Object) GetNamespace() string       { return o.namespace }
func (o *Object) GetUID() types.UID          { return types.UID(o.uid) }
func (o *Object) GetResourceVersion() string { return o.resourceVersion }
func (o *Object) GetGenerateName() string    { return o.meta("generateName").Str }
func (o *Object) GetSelfLink() string        { return o.meta("selfLink").Str }
func (o *Object) GetGeneration() int64       { return o.meta("generation").Int() }
func (o *Object) GetLabels() map[string]string {
	return stringMap(o.meta("labels"))
}
func (o *Object) GetAnnotations() map[string]string {
	return stringMap(o.meta("annotations"))
}
func (o *Object) GetCreationTimestamp() metav1.Time {
	var t metav1.Time
	_ = o.metaInto("creationTimestamp", &t)
	return t
}
func (o *Object) GetDeletionTimestamp() *metav1.Time {
	var t *metav1.Time
	_ = o.metaInto("deletionTimestamp", &t)
	return t
}
func (o *Object) GetDeletionGracePeriodSeconds() *int64 {
	r := o.meta("deletionGracePeriodSeconds")
	if !r.Exists() || r.Type == gjson.Null {
		return nil
	}
	n := r.Int()
	return &n
}
func (o *Object) GetFinalizers() []string {
	var f []string
	_ = o.metaInto("finalizers", &f)
	return f
}
func (o *Object) GetOwnerReferences() []metav1.OwnerReference {
	var refs []metav1.OwnerReference
	_ = o.metaInto("ownerReferences", &refs)
	return refs
}

// GetManagedFields returns nil: managedFields are cut out of cached objects.
func (o *Object) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }

func (o *Object) meta(field string) gjson.Result {
	return gjson.GetBytes(o.raw, "metadata."+gjson.Escape(field))
}

func (o *Object) metaInto(field string, v any) error {
	r := o.meta(field)
	if !r.Exists() {
		return nil
	}
	return json.Unmarshal([]byte(r.Raw), v)
}

func stringMap(r gjson.Result) map[string]string {
	if !r.IsObject() {
		return nil
	}
	m := map[string]string{}
	r.ForEach(func(k, v gjson.Result) bool {
		m[k.Str] = v.Str
		return true
	})
	return m
}

var errReadOnly = errors.New("dyninformer: cached objects are read-only; change a copy from Unstructured()")

func (o *Object) SetName(string)                               { panic(errReadOnly) }
func (o *Object) SetNamespace(string)                          { panic(errReadOnly) }
func (o *Object) SetUID(types.UID)                             { panic(errReadOnly) }
func (o *Object) SetResourceVersion(string)                    { panic(errReadOnly) }
func (o *Object) SetGenerateName(string)                       { panic(errReadOnly) }
func (o *Object) SetSelfLink(string)                           { panic(errReadOnly) }
func (o *Object) SetGeneration(int64)                          { panic(errReadOnly) }
func (o *Object) SetLabels(map[string]string)                  { panic(errReadOnly) }
func (o *Object) SetAnnotations(map[string]string)             { panic(errReadOnly) }
func (o *Object) SetCreationTimestamp(metav1.Time)             { panic(errReadOnly) }
func (o *Object) SetDeletionTimestamp(*metav1.Time)            { panic(errReadOnly) }
func (o *Object) SetDeletionGracePeriodSeconds(*int64)         { panic(errReadOnly) }
func (o *Object) SetFinalizers([]string)                       { panic(errReadOnly) }
func (o *Object) SetOwnerReferences([]metav1.OwnerReference)   { panic(errReadOnly) }
func (o *Object) SetManagedFields([]metav1.ManagedFieldsEntry) { panic(errReadOnly) }

var _ metav1.Object = (*Object)(nil)

// List is one page of a list: what the reflector's pager reads items and the
// resource version from.
type List struct {
	metav1.ListMeta
	Items []runtime.Object
	// others is how many items of other shards a sharded codec left out.
	others int
}

// GetObjectKind is part of runtime.Object.
func (l *List) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the list; the items are immutable and shared.
func (l *List) DeepCopyObject() runtime.Object {
	c := *l
	c.Items = append([]runtime.Object(nil), l.Items...)
	return &c
}

// str views b as a string without copying, for gjson: b must not change while
// the string or anything gjson returned from it is in use, and nothing read
// from it may be kept without a copy.
func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// parseObject makes an Object of one JSON object: it reads the metadata in one
// pass, copies the bytes once with managedFields cut out, and adds kind and
// apiVersion where the object has none (items of lists of built-in types).
// src is not kept. With a shard, an object of another shard (one with a uid
// that the shard does not own) is errOtherShard, read no further than its
// metadata and not copied: nothing of it is allocated.
func parseObject(src []byte, kind, apiVersion string, shard *Shard) (*Object, error) {
	return parseItem(src, newTypeMembers(kind, apiVersion), shard, nil)
}

// parseObjectSpans is parseObject, jumping over the containers of the
// metadata that sp names (the framer's spans, see hints.go) instead of
// scanning them. Spans that do not match what the scan finds are dropped
// and the object is read without them.
func parseObjectSpans(src []byte, kind, apiVersion string, shard *Shard, sp *objSpans) (*Object, error) {
	return parseItem(src, newTypeMembers(kind, apiVersion), shard, sp)
}

// typeMembers are the "kind" and "apiVersion" members, comma included, that
// an object without them gets (nil: none); a list makes them once for all
// its items.
type typeMembers struct{ kind, apiVersion []byte }

func newTypeMembers(kind, apiVersion string) typeMembers {
	var t typeMembers
	if kind != "" {
		t.kind = append(appendJSONString([]byte(`"kind":`), kind), ',')
	}
	if apiVersion != "" {
		t.apiVersion = append(appendJSONString([]byte(`"apiVersion":`), apiVersion), ',')
	}
	return t
}

// parseItem is parseObject with the type members made, and sp the framer's
// spans (nil: none).
func parseItem(src []byte, t typeMembers, shard *Shard, sp *objSpans) (*Object, error) {
	open := firstNonSpace(src)
	if open < 0 || src[open] != '{' {
		return nil, errors.New("not a JSON object")
	}
	p := &scanner{b: src, i: open + 1}
	var m metaSpans
	found := false
	hasKind, hasAPIVersion := false, false
	// kind and apiVersion come before metadata when they are there at all: Go's
	// encoders write TypeMeta first, and an unstructured object's keys sorted.
	for !found {
		key, ok := p.key()
		if !ok {
			break
		}
		if key == "metadata" {
			p.skipSpace()
			if p.i < len(src) && src[p.i] == '{' {
				found = true
				var jumps [][2]int
				if sp != nil {
					if sp.md[0] != p.i {
						return parseItem(src, t, shard, nil)
					}
					jumps = sp.inner[:sp.n]
				}
				m = readMetadata(p, jumps) // and finds its end, in one pass
				if sp != nil && (p.err != nil || p.i != sp.md[1]) {
					return parseItem(src, t, shard, nil)
				}
			}
			break
		}
		p.value()
		if p.err != nil {
			break
		}
		switch key {
		case "kind":
			hasKind = true
		case "apiVersion":
			hasAPIVersion = true
		}
	}
	if !found || p.err != nil {
		return nil, errors.New("object without metadata")
	}
	if shard != nil {
		// An object without a uid (a bookmark's) is the caller's to judge.
		if uid := m.get(src, m.uid, false); uid != "" && !shard.Owns(uid, m.get(src, m.namespace, false)) {
			return nil, errOtherShard
		}
	}
	if hasKind {
		t.kind = nil
	}
	if hasAPIVersion {
		t.apiVersion = nil
	}
	o := &Object{raw: assemble(src, open, lastNonSpace(src), t, widenCut(src, m.cut))}
	o.name, o.namespace, o.uid, o.resourceVersion = m.strings(src)
	if m.cut[0] >= 0 {
		var buf [1]stamp
		var stamps []stamp
		o.modified, stamps = readStamps(src[m.mf[0]:m.mf[1]], &buf)
		o.setStamps(stamps)
	}
	return o, nil
}

// errOtherShard is parseObject's answer for an object of another shard.
var errOtherShard = errors.New("an object of another shard")

// metaSpans are where readMetadata found the values of name, namespace, uid
// and resourceVersion ({0, 0}: absent) and the managedFields member, key to
// value ({-1, -1}: none), and its value (mf).
type metaSpans struct {
	name, namespace, uid, resourceVersion, cut, mf [2]int
}

// get is the string at span of b: a view of it, or a copy when copied.
func (metaSpans) get(b []byte, span [2]int, copied bool) string {
	return stringValue(b[span[0]:span[1]], copied)
}

// strings copies name, namespace, uid and resourceVersion out of b, in one
// allocation that the four share.
func (m metaSpans) strings(b []byte) (name, namespace, uid, resourceVersion string) {
	v := [4]string{m.get(b, m.name, false), m.get(b, m.namespace, false), m.get(b, m.uid, false), m.get(b, m.resourceVersion, false)}
	var all strings.Builder
	all.Grow(len(v[0]) + len(v[1]) + len(v[2]) + len(v[3]))
	for _, s := range v {
		all.WriteString(s)
	}
	s := all.String()
	n0, n1, n2 := len(v[0]), len(v[0])+len(v[1]), len(v[0])+len(v[1])+len(v[2])
	return s[:n0], s[n0:n1], s[n1:n2], s[n2:]
}

// readMetadata finds the values of the metadata object at m's position that an
// Object keeps, and its managedFields member. m is left after the object, or
// with its error. jumps are spans of containers in it, in order, that it
// takes without scanning them (the framer's, see hints.go); a parameter,
// not the scanner's, so that they stay on the stack.
func readMetadata(m *scanner, jumps [][2]int) metaSpans {
	out := metaSpans{cut: [2]int{-1, -1}}
	m.i++ // the '{'
	for {
		m.skipSpace()
		k := m.i
		key, ok := m.key()
		if !ok {
			return out
		}
		m.skipSpace()
		for len(jumps) > 0 && jumps[0][0] < m.i {
			jumps = jumps[1:]
		}
		var s, e int
		if len(jumps) > 0 && jumps[0][0] == m.i {
			s, e = m.i, jumps[0][1]
			m.i, jumps = e, jumps[1:]
		} else if s, e = m.value(); m.err != nil {
			return out
		}
		switch key {
		case "name":
			out.name = [2]int{s, e}
		case "namespace":
			out.namespace = [2]int{s, e}
		case "uid":
			out.uid = [2]int{s, e}
		case "resourceVersion":
			out.resourceVersion = [2]int{s, e}
		case "managedFields":
			out.cut = [2]int{k, e}
			out.mf = [2]int{s, e}
		}
	}
}

// appendJSONString appends s as a JSON string (Go's %q is not JSON for
// control characters).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

// widenCut extends the span of a "key":value member to one of its commas, so
// that what is left stays valid JSON.
func widenCut(src []byte, cut [2]int) [2]int {
	if cut[0] < 0 {
		return cut
	}
	i := cut[0] - 1
	for i >= 0 && isSpace(src[i]) {
		i--
	}
	if i >= 0 && src[i] == ',' {
		return [2]int{i, cut[1]}
	}
	j := cut[1]
	for j < len(src) && isSpace(src[j]) {
		j++
	}
	if j < len(src) && src[j] == ',' {
		return [2]int{cut[0], j + 1}
	}
	return cut
}

// assemble copies src[open:end+1] into a slice of exactly its final size, with
// the type members after the opening brace and the cut span left out.
func assemble(src []byte, open, end int, t typeMembers, cut [2]int) []byte {
	n := end + 1 - open + len(t.kind) + len(t.apiVersion)
	if cut[0] >= 0 {
		n -= cut[1] - cut[0]
	}
	out := make([]byte, 0, n)
	out = append(out, '{')
	out = append(out, t.kind...)
	out = append(out, t.apiVersion...)
	if cut[0] < 0 {
		return append(out, src[open+1:end+1]...)
	}
	out = append(out, src[open+1:cut[0]]...)
	return append(out, src[cut[1]:end+1]...)
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func firstNonSpace(b []byte) int {
	for i, c := range b {
		if !isSpace(c) {
			return i
		}
	}
	return -1
}

func lastNonSpace(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if !isSpace(b[i]) {
			return i
		}
	}
	return -1
}

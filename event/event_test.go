package event

import (
	"testing"
	"time"
)

// The ordering key is the object's resource without its version, namespace and
// name: events of one object seen through two versions of its resource (a watch
// that moved) share it, and nothing else does.
func TestObjectKey(t *testing.T) {
	t.Parallel()
	obj := func(ns, name string) []byte {
		return []byte(`{"metadata":{"namespace":"` + ns + `","name":"` + name + `","uid":"u1","resourceVersion":"1"}}`)
	}
	v1 := Resource{Group: "move.example.com", Version: "v1", Resource: "movers", Kind: "Mover", Namespaced: true}
	v2 := v1
	v2.Version = "v2"
	core := Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	key := func(r Resource, ns, name string) string {
		return New(Add, r, obj(ns, name), nil, time.Now()).ObjectKey()
	}
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{"another version", key(v1, "ns", "m1"), key(v2, "ns", "m1"), true},
		{"another name", key(v1, "ns", "m1"), key(v1, "ns", "m2"), false},
		{"another namespace", key(v1, "a", "m1"), key(v1, "b", "m1"), false},
		{"another group", key(v1, "ns", "m1"), key(Resource{Group: "other.example.com", Version: "v1", Resource: "movers"}, "ns", "m1"), false},
		{"another resource", key(core, "ns", "x"), key(Resource{Version: "v1", Resource: "secrets"}, "ns", "x"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.a == tt.b) != tt.same {
				t.Errorf("keys %q and %q: same = %v, want %v", tt.a, tt.b, tt.a == tt.b, tt.same)
			}
		})
	}
	if got, want := key(v2, "ns", "m1"), "move.example.com/movers/ns/m1"; got != want {
		t.Errorf("key %q, want %q", got, want)
	}
	if got, want := key(core, "ns", "x"), "/configmaps/ns/x"; got != want {
		t.Errorf("core key %q, want %q", got, want)
	}
}

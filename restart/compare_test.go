package restart

import (
	"slices"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/payload"
	"github.com/dynwatch/dynwatch/state"
)

// recordOf is the record of ev with red's secret paths digested, as the
// watcher writes it for a new object.
func recordOf(ev *event.Event, paths []string, red *payload.Redactor, key state.DigestKey) *state.Record {
	return Record(ev, nil, paths, red.Secret(ev.Resource, ev.Object), key)
}

var cms = event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}

func cm(uid, rv, v string) *event.Event {
	return event.New(event.Add, cms, []byte(`{"metadata":{"name":"c","namespace":"ns","uid":"`+uid+`","resourceVersion":"`+rv+`"},"data":{"k":"`+v+`"}}`), nil, time.Now())
}

// What a listed object fires, given what the records hold of it.
func TestListed(t *testing.T) {
	t.Parallel()
	key := state.DigestKey("0123456789abcdef0123456789abcdef")
	paths := append([]string{"data.k"}, MetaPaths...)
	old := Record(cm("u1", "1", "a"), nil, paths, nil, key)
	now := time.Now()
	tests := []struct {
		name string
		ev   *event.Event
		k    Known
		want []string // type uid rv of each event
	}{
		{"new", cm("u1", "1", "a"), Known{}, []string{"add u1 1"}},
		{"the same version", cm("u1", "1", "a"), Known{Record: &state.Record{ResourceVersion: "1", Hash: old.Hash}}, nil},
		{"a new version, the same content", cm("u1", "2", "a"), Known{Record: old}, nil},
		{"changed", cm("u1", "2", "b"), Known{Record: old}, []string{"update u1 2"}},
		{"re-created under its name", cm("u2", "5", "a"), Known{Renamed: old, RenamedUID: "u1"}, []string{"delete u1 1", "add u2 5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, ev := range Listed(cms, tt.ev, tt.k, event.Replay, key, now) {
				if ev.Origin != event.Replay {
					t.Errorf("%s of %s: origin %s", ev.Type, ev.UID, ev.Origin)
				}
				got = append(got, string(ev.Type)+" "+ev.UID+" "+ev.ResourceVersion)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("fires %q, want %q", got, tt.want)
			}
		})
	}
	del := Listed(cms, cm("u2", "5", "a"), Known{Renamed: old, RenamedUID: "u1"}, event.Live, key, now)[0]
	if del.Name != "c" || del.Namespace != "ns" || !del.Time.Equal(now) || del.Origin != event.Live {
		t.Errorf("the replayed delete is %+v", del)
	}
}

// The records a list did not see, in its scope only, sorted.
func TestVanished(t *testing.T) {
	t.Parallel()
	records := map[string]string{"u3": "a", "u1": "a", "u2": "b", "u4": "a"}
	seen := map[string]bool{"u4": true}
	res := state.Resource{Resource: "configmaps"}
	if got := Vanished(records, seen, res.In("a")); !slices.Equal(got, []string{"u1", "u3"}) {
		t.Errorf("in a: %v", got)
	}
	if got := Vanished(records, seen, res.In("")); !slices.Equal(got, []string{"u1", "u2", "u3"}) {
		t.Errorf("in all namespaces: %v", got)
	}
}

// A name's uid, in scope only; the same uid is no rename.
func TestNames(t *testing.T) {
	t.Parallel()
	n := Names{}
	scope := state.Resource{Resource: "configmaps"}.In("ns")
	n.Add(scope, "u1", "ns", "c")
	n.Add(scope, "u9", "other", "c")
	if got := n.Renamed(cm("u2", "1", "a")); got != "u1" {
		t.Errorf("renamed %q, want u1", got)
	}
	if got := n.Renamed(cm("u1", "1", "a")); got != "" {
		t.Errorf("the same uid renamed %q", got)
	}
	if len(n) != 1 {
		t.Errorf("names out of scope noted: %v", n)
	}
}

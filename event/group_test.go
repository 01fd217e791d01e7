package event

import (
	"encoding/json"
	"reflect"
	"testing"
)

func member(t *testing.T, seq uint64, typ Type, ns, name string) *Delivery {
	t.Helper()
	p := &Payload{
		ID: "u-" + name + ":1:" + string(typ), Type: typ, Rule: "r",
		Resource:  Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true},
		Namespace: ns, Name: name, Object: json.RawMessage(`{"metadata":{"name":"` + name + `"}}`),
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return &Delivery{Payload: p, JSON: b, Key: "/configmaps/" + ns + "/" + name, Seq: seq}
}

// A grouped delivery's JSON is {"group","count","events"}, each event the
// member's bytes as they are; Payload and Key are the first member's, and
// the members stay in order with their Seq.
func TestNewGroupDelivery(t *testing.T) {
	t.Parallel()
	ms := []*Delivery{member(t, 7, Add, "a", "one"), member(t, 9, Update, "a", "two"), member(t, 12, Delete, "a", "one")}
	d, err := NewGroupDelivery(map[string]string{"namespace": "a", "rule": "r"}, ms)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"group":{"namespace":"a","rule":"r"},"count":3,"events":[` + string(ms[0].JSON) + `,` + string(ms[1].JSON) + `,` + string(ms[2].JSON) + `]}`
	if string(d.JSON) != want {
		t.Errorf("JSON\n got %s\nwant %s", d.JSON, want)
	}
	var back GroupPayload
	if err := json.Unmarshal(d.JSON, &back); err != nil {
		t.Fatal(err)
	}
	if back.Count != 3 || back.Events[2].Type != Delete || back.Events[1].Name != "two" || back.Group["namespace"] != "a" {
		t.Errorf("decoded %+v", back)
	}
	if d.Payload != ms[0].Payload || d.Key != ms[0].Key {
		t.Errorf("payload/key are not the first member's: %q", d.Key)
	}
	if d.Group == nil || d.Group.Count != 3 || d.Group.Events[1] != ms[1].Payload || !reflect.DeepEqual(d.Group.Group, map[string]string{"namespace": "a", "rule": "r"}) {
		t.Errorf("group = %+v", d.Group)
	}
	if len(d.Members) != 3 || d.Members[0].Seq != 7 || d.Members[2].Seq != 12 {
		t.Errorf("members = %v", d.Members)
	}
}

// No labels (group: {} groups all of an action's events) is "group":{};
// no members is an error, not an empty delivery.
func TestNewGroupDeliveryEdges(t *testing.T) {
	t.Parallel()
	d, err := NewGroupDelivery(nil, []*Delivery{member(t, 0, Add, "a", "x")})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(d.JSON, &m); err != nil {
		t.Fatal(err)
	}
	if string(m["group"]) != "{}" || string(m["count"]) != "1" {
		t.Errorf("JSON %s", d.JSON)
	}
	if _, err := NewGroupDelivery(map[string]string{}, nil); err == nil {
		t.Error("no members: want an error")
	}
	if _, err := NewGroupDelivery(nil, []*Delivery{{Key: "k"}}); err == nil {
		t.Error("a member without JSON: want an error")
	}
}

func TestGroupLabels(t *testing.T) {
	t.Parallel()
	p := &Payload{
		Type: Update, Rule: "rollout", Namespace: "prod", Name: "api", Transition: "enter",
		Resource: Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true},
	}
	got := GroupLabels([]string{"rule", "namespace", "name", "kind", "resource", "cluster", "type", "transition"}, p)
	want := map[string]string{
		"rule": "rollout", "namespace": "prod", "name": "api", "kind": "Deployment",
		"resource": "deployments.apps", "cluster": "", "type": "update", "transition": "enter",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if got := GroupLabels(nil, p); len(got) != 0 {
		t.Errorf("no by: %v", got)
	}
	core := &Payload{Resource: Resource{Version: "v1", Resource: "configmaps"}}
	if got := GroupLabels([]string{"resource"}, core)["resource"]; got != "configmaps" {
		t.Errorf("core resource = %q", got)
	}
}

// A group by cluster keeps each cluster's events apart.
func TestGroupLabelsByCluster(t *testing.T) {
	east, west := &Payload{Cluster: "east"}, &Payload{Cluster: "west"}
	if a, b := GroupLabels([]string{"cluster"}, east), GroupLabels([]string{"cluster"}, west); a["cluster"] != "east" || b["cluster"] != "west" {
		t.Errorf("labels %v and %v; want east and west", a, b)
	}
}

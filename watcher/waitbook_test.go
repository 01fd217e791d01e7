package watcher

import (
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/timed"
)

// A reload forgets the waits of a rule it no longer times, keeps the others
// with their counts, and schedules them by the rule's new `for`.
func TestWaitBookReconfigure(t *testing.T) {
	b := newWaitBook(true)
	b.setSpecs(map[string]timed.Spec{"a": {Fire: timed.FireEnter, For: time.Hour}, "b": {Fire: timed.FireEnter, For: time.Hour}})
	since := time.Now()
	pending := timed.State{Holding: true, Since: since}
	ka, kb := waitKey("/configmaps/ns/x", "a"), waitKey("/configmaps/ns/x", "b")
	b.set(ka, "a", timed.State{}, pending)
	b.set(kb, "b", timed.State{}, pending)
	if got := b.counted(); got["a"].pending != 1 || got["b"].pending != 1 {
		t.Fatalf("counts %v, want one pending each", got)
	}
	b.setSpecs(map[string]timed.Spec{"a": {Fire: timed.FireEnter, For: time.Minute}})
	(&Watcher{waits: b}).forgetMemWaits(func(key string) bool {
		p, _ := parseWaitKey(key)
		return p.rule == "a"
	})
	if got := b.counted(); got["a"].pending != 1 || got["b"] != (waitCounts{}) {
		t.Errorf("counts after the reload %v, want a's kept and b's gone", got)
	}
	if s := b.state(kb); !s.IsZero() {
		t.Errorf("b's wait kept after its rule went: %+v", s)
	}
	if s := b.state(ka); s != pending {
		t.Errorf("a's wait %+v, want it kept as it was", s)
	}
	// The new `for` (a minute) brings a's due time forward from an hour.
	due := b.popDue(since.Add(2 * time.Minute))
	if len(due) == 0 || due[0].key != ka {
		t.Errorf("due after 2 minutes: %+v, want a's wait by its new for", due)
	}
}

// A wait's key is read back into its object and rule, with a cluster's
// name, and with names a group or resource never has.
func TestParseWaitKey(t *testing.T) {
	for _, c := range []struct {
		key  string
		want waitPlace
	}{
		{waitKey("apps/deployments/ns/web", "stuck"), waitPlace{group: "apps", resource: "deployments", namespace: "ns", name: "web", rule: "stuck"}},
		{waitKey("east:apps/deployments/ns/web", "stuck"), waitPlace{cluster: "east", group: "apps", resource: "deployments", namespace: "ns", name: "web", rule: "stuck"}},
		{waitKey("rbac.authorization.k8s.io/clusterroles//system:controller:x", "r"), waitPlace{group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "system:controller:x", rule: "r"}},
	} {
		got, ok := parseWaitKey(c.key)
		if !ok || got != c.want {
			t.Errorf("parseWaitKey(%q) = %+v, %v; want %+v", c.key, got, ok, c.want)
		}
	}
	if _, ok := parseWaitKey("no-rule"); ok {
		t.Error("a key without a rule parsed")
	}
}

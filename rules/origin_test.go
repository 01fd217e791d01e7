package rules

import (
	"strings"
	"testing"

	"github.com/dynwatch/dynwatch/event"
)

// TestOriginDecidedAsExplained: for every origin, onStart and reload epoch,
// Decide's verdict is Explain's, and Explain's origin step says why in the
// words it always has.
func TestOriginDecidedAsExplained(t *testing.T) {
	t.Parallel()
	rs := compile(t, `
apiVersion: dynwatch/v1alpha1
state: {path: state.db}
actions: [{name: out, log: {}}]
rules:
  - {name: all, resources: [{kind: ConfigMap}], onStart: all, actions: [out]}
  - {name: diff, resources: [{kind: ConfigMap}], onStart: diff, actions: [out]}
  - {name: none, resources: [{kind: ConfigMap}], onStart: none, actions: [out]}
`)
	added := Added{2: {"all": true, "diff": true, "none": true}}
	obj := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n"}}`)
	for _, tc := range []struct {
		origin event.Origin
		epoch  uint64
		rule   string
		fires  bool
		found  string // what the origin step says; "" for no step
	}{
		{event.Live, 0, "diff", true, ""},
		{event.InitialList, 0, "all", true, "initial list"},
		{event.InitialList, 0, "diff", false, "(onStart: diff fires on it only with all)"},
		{event.InitialList, 0, "none", false, "(onStart: none fires on it only with all)"},
		{event.InitialList, 2, "all", true, "initial list"},
		{event.InitialList, 3, "all", false, "of a reload that did not add this rule"},
		{event.InitialList, 3, "diff", false, "of a reload that did not add this rule"},
		{event.Replay, 0, "diff", true, "(onStart: diff)"},
		{event.Replay, 0, "all", false, "(onStart: all)"},
		{event.Relist, 0, "all", false, "after a version move: nothing in it is new"},
	} {
		var r *Rule
		for _, x := range rs {
			if x.Name == tc.rule {
				r = x
			}
		}
		ev := &event.Event{Type: event.Add, Object: obj, Origin: tc.origin, Epoch: tc.epoch}
		name := tc.origin.String() + "/" + tc.rule
		if got := r.Decide(ev, added); got.Fires != tc.fires {
			t.Errorf("%s epoch %d: Decide fires %v, want %v", name, tc.epoch, got.Fires, tc.fires)
		}
		v, steps := r.Explain(ev, added, nil)
		if v.Fires != tc.fires {
			t.Errorf("%s epoch %d: Explain fires %v, want %v", name, tc.epoch, v.Fires, tc.fires)
		}
		var origin *Step
		for i := range steps {
			if steps[i].Check == "origin" {
				origin = &steps[i]
			}
		}
		switch {
		case tc.found == "" && origin != nil:
			t.Errorf("%s: an origin step for a live event: %+v", name, *origin)
		case tc.found != "" && origin == nil:
			t.Errorf("%s epoch %d: no origin step, want one saying %q", name, tc.epoch, tc.found)
		case origin != nil && (!strings.HasPrefix(origin.Found, tc.origin.String()) || !strings.Contains(origin.Found, tc.found) || origin.Held != tc.fires):
			t.Errorf("%s epoch %d: origin step %+v, want it to say %q and held %v", name, tc.epoch, *origin, tc.found, tc.fires)
		}
	}
}

// TestDecideOnAnInitialListAllocatesNothing: deciding that an initial list's
// object does not fire a rule (onStart: none, the default without state) costs no
// allocation: at start every object of every watched resource is decided so,
// and the words of why are for Explain only.
func TestDecideOnAnInitialListAllocatesNothing(t *testing.T) {
	rs := compile(t, `
apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules:
  - {name: diff, resources: [{kind: ConfigMap}], actions: [out]}
`)
	ev := &event.Event{Type: event.Add, Object: []byte(`{"metadata":{"name":"a"}}`), Origin: event.InitialList}
	if n := testing.AllocsPerRun(100, func() {
		if rs[0].Decide(ev, nil).Fires {
			t.Fatal("an initial list's object fires a rule with onStart: none")
		}
	}); n != 0 {
		t.Errorf("deciding on an initial list's object allocates %.0f times", n)
	}
}

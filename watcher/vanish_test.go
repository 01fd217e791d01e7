package watcher

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"

	"github.com/dynwatch/dynwatch/event"
)

// hidingDiscovery is the real discovery, but while hide is set it does not
// list ConfigMaps: what a flapping aggregated API looks like to a refresh.
type hidingDiscovery struct {
	discovery.DiscoveryInterface
	hide atomic.Bool
}

func (h *hidingDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	groups, lists, err := h.DiscoveryInterface.ServerGroupsAndResources()
	if !h.hide.Load() {
		return groups, lists, err
	}
	out := make([]*metav1.APIResourceList, 0, len(lists))
	for _, l := range lists {
		if l.GroupVersion == "v1" {
			c := *l
			c.APIResources = slices.DeleteFunc(slices.Clone(l.APIResources), func(r metav1.APIResource) bool { return r.Name == "configmaps" })
			l = &c
		}
		out = append(out, l)
	}
	return groups, out, err
}

// A resource that leaves discovery for less than the grace period keeps its
// records: back, it is compared with them as at a restart (a delete in the gap
// fires once, a change an update, a new object an add, all replayed; an object
// that did not change fires nothing). Gone for longer, its records go and it
// comes back as a new resource.
func TestResourceBackInDiscoveryIsDiffed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		grace time.Duration
		want  map[string]string // name -> events, "+" marks a replay
	}{
		{"back within the grace", vanishGrace, map[string]string{"gone": "delete+", "changed": "update+", "new": "add+", "same": "update"}},
		{"back after the grace", 0, map[string]string{"changed": "add", "new": "add", "same": "add, update"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := namespace(t)
			for _, n := range []string{"same", "changed", "gone"} {
				create(t, cmGVR, ns, configMap(ns, n, map[string]any{"v": "0"}))
			}
			disc := &hidingDiscovery{DiscoveryInterface: discovery.NewDiscoveryClientForConfigOrDie(env.Config)}
			dbPath := filepath.Join(t.TempDir(), "state.db")
			r, _ := runDurable(t, durableRun{dbPath: dbPath, disc: disc, config: cmsConfig(dbPath, ns), setup: func(w *Watcher) { w.srcs[0].vanishGrace = tc.grace }})
			compared(t, r) // the baseline: nothing fires

			disc.hide.Store(true)
			r.w.Refresh()
			waitUntil(t, "the watch to stop", eventWait, func() bool { return !watching(r.w, cmGVR) })
			r.w.Refresh() // a second refresh in the gap: past the grace, the records go
			setData(t, ns, "changed", "1")
			remove(t, cmGVR, ns, "gone")
			create(t, cmGVR, ns, configMap(ns, "new", map[string]any{"v": "0"}))

			disc.hide.Store(false)
			r.w.Refresh()
			compared(t, r)
			setData(t, ns, "same", "1") // a live event after whatever the return fired for it
			r.out.waitMatch(t, "the live update", eventWait, func(p event.Payload) bool { return p.Name == "same" && p.Type == event.Update })
			got := map[string]string{}
			for _, p := range r.out.snapshot() {
				e := string(p.Type)
				if p.Replay {
					e += "+"
				}
				if got[p.Name] != "" {
					e = got[p.Name] + ", " + e
				}
				got[p.Name] = e
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("events %v, want %v", got, tc.want)
			}
		})
	}
}

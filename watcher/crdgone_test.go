package watcher

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/dynwatch/dynwatch/event"
)

// With state, a CRD deleted and created again within the grace that keeps a
// flapping resource's records is a new resource, not a flap: its objects fire
// live adds, not replays, and the objects the delete took are not replayed
// as deletes of the new resource.
func TestCRDRecreatedWithinGraceIsNew(t *testing.T) {
	ns := namespace(t)
	gvr := schema.GroupVersionResource{Group: "again.example.com", Version: "v1", Resource: "phoenixes"}
	name := gvr.Resource + "." + gvr.Group
	t.Cleanup(func() { _ = dyn(t).Resource(crdGVR).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	dbPath := filepath.Join(t.TempDir(), "state.db")
	disc := &hidingResource{DiscoveryInterface: discovery.NewDiscoveryClientForConfigOrDie(env.Config), resource: gvr.Resource}
	r, _ := runDurable(t, durableRun{dbPath: dbPath, disc: disc, config: fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
state: {path: %s}
actions: [{name: out, log: {}}]
rules: [{name: phoenixes, resources: [{group: %s, resource: %s}], namespaces: [%s], actions: [out]}]
`, dbPath, gvr.Group, gvr.Resource, ns)})
	waitUntil(t, "the CRD watch to sync", eventWait, r.w.Synced)
	for round := range 2 {
		// The CRD and an object of it land before dynwatch's discovery
		// shows the resource (one apply of both): the object is in the
		// watch's first list.
		disc.hide.Store(true)
		create(t, crdGVR, "", crd(gvr.Group, gvr.Resource, "Phoenix"))
		obj := fmt.Sprint("p", round)
		createCRObject(t, gvr, ns, obj, "Phoenix")
		disc.hide.Store(false)
		r.w.Refresh()
		got := r.out.waitMatch(t, "the add of "+obj, eventWait, func(p event.Payload) bool { return p.Name == obj })
		if got.Type != event.Add || got.Replay {
			t.Errorf("round %d: %s, want a live add", round, summary([]event.Payload{got}))
		}
		deleteCRD(t, name)
		waitUntil(t, "the informer to stop", eventWait, func() bool { return !watching(r.w, gvr) })
	}
	for _, p := range r.out.snapshot() {
		if p.Replay {
			t.Errorf("a replay fired: %s", summary([]event.Payload{p}))
		}
	}
}

// hidingResource is the real discovery, but while hide is set it does not
// list the resources named resource.
type hidingResource struct {
	discovery.DiscoveryInterface
	resource string
	hide     atomic.Bool
}

func (h *hidingResource) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	groups, lists, err := h.DiscoveryInterface.ServerGroupsAndResources()
	if !h.hide.Load() {
		return groups, lists, err
	}
	out := make([]*metav1.APIResourceList, 0, len(lists))
	for _, l := range lists {
		c := *l
		c.APIResources = slices.DeleteFunc(slices.Clone(l.APIResources), func(r metav1.APIResource) bool { return r.Name == h.resource })
		out = append(out, &c)
	}
	return groups, out, err
}

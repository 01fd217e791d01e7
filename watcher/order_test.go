package watcher

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// An object deleted and re-created under its name while the watch runs: the
// old uid's delete is delivered before the new uid's add, although the
// receiver is slow on deletes and the action delivers four objects at once
// (an order kept per uid would let the add overtake the delete).
func TestLiveDeleteAndReCreateKeepOrderAcrossUIDs(t *testing.T) {
	ns := namespace(t)
	var (
		mu  sync.Mutex
		got = map[string][]string{} // name -> "type uid", in arrival order
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var pl event.Payload
		if err := json.NewDecoder(r.Body).Decode(&pl); err != nil {
			t.Errorf("bad body: %v", err)
		}
		if pl.Type == event.Delete {
			time.Sleep(150 * time.Millisecond)
		}
		mu.Lock()
		got[pl.Name] = append(got[pl.Name], string(pl.Type)+" "+pl.UID)
		mu.Unlock()
	}))
	defer srv.Close()
	r := start(t, fmt.Sprintf(`apiVersion: dynwatch/v1alpha1
actions: [{name: hook, concurrency: 4, webhook: {url: %q}}]
rules: [{name: cms, resources: [{group: "", resource: configmaps}], namespaces: [%s], actions: [hook]}]
`, srv.URL, ns))
	names := []string{"a", "b", "c", "d", "e"}
	want := map[string][]string{}
	for _, n := range names {
		u := create(t, cmGVR, ns, configMap(ns, n, nil))
		want[n] = []string{"add " + string(u.GetUID())}
	}
	for _, n := range names {
		old := want[n][0][len("add "):]
		remove(t, cmGVR, ns, n)
		u := create(t, cmGVR, ns, configMap(ns, n, nil))
		want[n] = append(want[n], "delete "+old, "add "+string(u.GetUID()))
	}
	waitUntil(t, "three events per object", eventWait, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range names {
			if len(got[n]) < 3 {
				return false
			}
		}
		return true
	})
	r.quiet(t, "hook")
	mu.Lock()
	defer mu.Unlock()
	for _, n := range names {
		if fmt.Sprint(got[n]) != fmt.Sprint(want[n]) {
			t.Errorf("%s: delivered %v, want %v", n, got[n], want[n])
		}
	}
}

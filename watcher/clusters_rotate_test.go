package watcher

import (
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/internal/testenv"
)

// link returns the named cluster's link, nil if it has none yet.
func (cr *clusterRun) link(name string) *link {
	cr.envMu.Lock()
	defer cr.envMu.Unlock()
	return cr.links[name]
}

// requestsWith counts the requests l carried with the bearer token.
func (l *link) requestsWith(token string) int64 {
	if n, ok := l.auths.Load("Bearer " + token); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// A cluster's kubeconfig rewritten with another token (a rotation) is read
// again: at a reload (the config unchanged, as after a SIGHUP) and at the
// discovery refresh, that one cluster's clients are built again and its
// watches go on with the new token; the other cluster's informers are not
// touched, and, with state, the rebuilt cluster replays nothing.
func TestClusterKubeconfigRotatedIsReadAgain(t *testing.T) {
	cp, err := testenv.Start(testenv.Options{Users: []testenv.User{
		{Name: "before", Token: "token-before", Groups: []string{"system:masters"}},
		{Name: "after", Token: "token-after", Groups: []string{"system:masters"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	ns := namespace(t)
	wd := namespaceIn(t, cp, ns)
	kc := filepath.Join(t.TempDir(), "rot.kubeconfig")
	if err := cp.WriteKubeconfig(kc, "token-before"); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(t.TempDir(), "state.db")
	cfg := clustersConfig(ns, dbPath, "  - name: east\n  - name: rot\n    kubeconfig: "+kc+"\n")
	createIn(t, wd, ns, "before", "1")
	cr := runClusters(t, cfg, dbPath, nil)
	cr.synced(t, "east")
	cr.synced(t, "rot")
	eastMgr, rotMgr := cr.w.ClusterManager("east"), cr.w.ClusterManager("rot")

	rebuilt := func(what string, old *dyninformer.Manager, token string) *dyninformer.Manager {
		t.Helper()
		testenv.WaitFor(t, "rot built again "+what, 30*time.Second, func() bool {
			m := cr.w.ClusterManager("rot")
			return m != nil && m != old && m.HasSynced()
		})
		cr.synced(t, "rot")
		if n := cr.link("rot").requestsWith(token); n == 0 {
			t.Errorf("%s: no request with the new token", what)
		}
		return cr.w.ClusterManager("rot")
	}
	if err := cp.WriteKubeconfig(kc, "token-after"); err != nil {
		t.Fatal(err)
	}
	reloadClusters(t, cr, cfg) // the same config: a SIGHUP
	rotMgr = rebuilt("at the reload", rotMgr, "token-after")
	createIn(t, wd, ns, "after-reload", "1")
	cr.out.waitMatch(t, "rot's event", eventWait, func(p event.Payload) bool { return p.Cluster == "rot" && p.Name == "after-reload" })

	before := cr.link("rot").requestsWith("token-before")
	if err := cp.WriteKubeconfig(kc, "token-before"); err != nil {
		t.Fatal(err)
	}
	rebuilt("at the discovery refresh", rotMgr, "token-before")
	if cr.link("rot").requestsWith("token-before") == before {
		t.Error("no request with the token rotated back")
	}
	createIn(t, wd, ns, "after-refresh", "1")
	cr.out.waitMatch(t, "rot's event", eventWait, func(p event.Payload) bool { return p.Cluster == "rot" && p.Name == "after-refresh" })
	cr.quiet(t, "out")
	want := []string{"rot everywhere add after-refresh", "rot everywhere add after-reload"}
	if s := seen(cr.out.snapshot()); !slices.Equal(s, want) {
		t.Errorf("payloads: %v, want %v (nothing replayed by the rebuilt cluster)", s, want)
	}
	if cr.w.ClusterManager("east") != eastMgr {
		t.Error("east's informer manager was replaced")
	}
}

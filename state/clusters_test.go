package state

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/timed"
)

// clusterFile returns a store with a record and a baseline of configmaps in
// each of clusters ("" is the one cluster).
func clusterFile(t *testing.T, clusters ...string) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	err = s.Update(func(tx *Tx) error {
		for _, c := range clusters {
			r := Resource{Cluster: c, Resource: "configmaps"}
			if err := tx.Put(r, "uid-"+c, &Record{Namespace: "a", Name: "x", ResourceVersion: "7"}); err != nil {
				return err
			}
			if err := tx.SetBaseline(r.In("a")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// held lists "cluster/uid" of every record and the clusters with a baseline.
func held(t *testing.T, s *Store) (records, baselines []string) {
	t.Helper()
	_ = s.View(func(tx *Tx) error {
		for _, r := range tx.Resources() {
			_ = tx.ForEach(r, func(uid string, _ *Record) error { records = append(records, r.Cluster+"/"+uid); return nil })
			if tx.HasBaseline(r.In("a")) {
				baselines = append(baselines, r.Cluster)
			}
		}
		return nil
	})
	slices.Sort(records)
	slices.Sort(baselines)
	return records, baselines
}

// Only the kept clusters' records and baselines stay; the one cluster's
// are dropped too when it is not kept.
func TestKeepClustersDropsTheOthers(t *testing.T) {
	t.Parallel()
	s := clusterFile(t, "", "east", "west")
	kept, err := s.KeepClusters([]string{"east"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if kept.Dropped != 2 || kept.Adopted != 0 || !slices.Equal(kept.DroppedFrom, []string{"", "west"}) {
		t.Errorf("kept = %+v", kept)
	}
	recs, bases := held(t, s)
	if !slices.Equal(recs, []string{"east/uid-east"}) || !slices.Equal(bases, []string{"east"}) {
		t.Errorf("records %v, baselines %v; want east's only", recs, bases)
	}
	// Without clusters, the named ones go.
	s = clusterFile(t, "", "east")
	if kept, err = s.KeepClusters([]string{""}, ""); err != nil || kept.Dropped != 1 {
		t.Fatalf("kept = %+v, %v", kept, err)
	}
	if recs, bases = held(t, s); !slices.Equal(recs, []string{"/uid-"}) || !slices.Equal(bases, []string{""}) {
		t.Errorf("records %v, baselines %v; want the one cluster's only", recs, bases)
	}
}

// The one cluster's records become adopt's (record and baseline) when
// adopt has none; when it has its own, they are kept and the one
// cluster's dropped.
func TestKeepClustersAdoptsTheOneCluster(t *testing.T) {
	t.Parallel()
	s := clusterFile(t, "")
	kept, err := s.KeepClusters([]string{"east", "west"}, "east")
	if err != nil {
		t.Fatal(err)
	}
	if kept.Adopted != 1 || kept.Dropped != 0 {
		t.Errorf("kept = %+v", kept)
	}
	recs, bases := held(t, s)
	if !slices.Equal(recs, []string{"east/uid-"}) || !slices.Equal(bases, []string{"east"}) {
		t.Errorf("records %v, baselines %v; want the one cluster's as east's", recs, bases)
	}
	_ = s.View(func(tx *Tx) error {
		if r, _ := tx.Get(Resource{Cluster: "east", Resource: "configmaps"}, "uid-"); r == nil || r.ResourceVersion != "7" || r.Name != "x" {
			t.Errorf("east's adopted record = %+v", r)
		}
		return nil
	})
	s = clusterFile(t, "", "east")
	if kept, err = s.KeepClusters([]string{"east"}, "east"); err != nil || kept.Adopted != 0 || kept.Dropped != 1 {
		t.Fatalf("kept = %+v, %v", kept, err)
	}
	if recs, _ = held(t, s); !slices.Equal(recs, []string{"east/uid-east"}) {
		t.Errorf("records %v; want east's own", recs)
	}
}

// The one cluster's queued deliveries become the adopting cluster's, in
// order and with their payloads, so that an object's backlog and its new
// events share one ordering key; a named cluster's entries and a file
// whose adopt cluster has records of its own keep their keys.
func TestKeepClustersAdoptsTheQueuedKeys(t *testing.T) {
	t.Parallel()
	s := clusterFile(t, "")
	err := s.Update(func(tx *Tx) error {
		for _, e := range [][2]string{{"/configmaps/a/x", `{"v":1}`}, {"west:/configmaps/a/x", `{"v":2}`}, {"/configmaps/a/x", `{"v":3}`}} {
			if _, err := tx.Enqueue("out", e[0], []byte(e[1])); err != nil {
				return err
			}
		}
		_, err := tx.Enqueue("other", "apps/deployments/a/d", []byte(`{"v":4}`))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := s.KeepClusters([]string{"east", "west"}, "east")
	if err != nil {
		t.Fatal(err)
	}
	if kept.AdoptedQueued != 3 {
		t.Errorf("AdoptedQueued = %d, want 3", kept.AdoptedQueued)
	}
	want := map[string][]string{
		"out":   {`east:/configmaps/a/x {"v":1}`, `west:/configmaps/a/x {"v":2}`, `east:/configmaps/a/x {"v":3}`},
		"other": {`east:apps/deployments/a/d {"v":4}`},
	}
	for action, w := range want {
		ps, err := s.PendingAfter(action, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.Key+" "+string(p.JSON))
		}
		if !slices.Equal(got, w) {
			t.Errorf("%s's queue:\n%v\nwant\n%v", action, got, w)
		}
	}

	own := clusterFile(t, "", "east")
	if err := own.Update(func(tx *Tx) error { _, err := tx.Enqueue("out", "/configmaps/a/x", []byte(`{}`)); return err }); err != nil {
		t.Fatal(err)
	}
	if kept, err = own.KeepClusters([]string{"east"}, "east"); err != nil || kept.AdoptedQueued != 0 {
		t.Fatalf("kept = %+v, %v; east has records of its own, so nothing is adopted", kept, err)
	}
	if ps, _ := own.PendingAfter("out", 0, 10); len(ps) != 1 || ps[0].Key != "/configmaps/a/x" {
		t.Errorf("queue = %+v; want the one cluster's key kept", ps)
	}
}

// An RBAC object's name may hold colons (system:aggregate-to-edit,
// kubeadm:node-proxier): its ordering key without clusters,
// "rbac.authorization.k8s.io/clusterroles//system:aggregate-to-edit", is
// the one cluster's all the same, and its queued deliveries take the
// adopting cluster's key as any other, or the backlog and the object's new
// events (east:rbac.authorization.k8s.io/…) are sent side by side.
func TestKeepClustersAdoptsQueuedKeysWithColons(t *testing.T) {
	t.Parallel()
	s := clusterFile(t, "")
	keys := []string{
		"rbac.authorization.k8s.io/clusterroles//system:aggregate-to-edit",
		"rbac.authorization.k8s.io/rolebindings/kube-system/kubeadm:nodes-kubeadm-config",
		"/configmaps/a/x",
	}
	err := s.Update(func(tx *Tx) error {
		for _, k := range keys {
			if _, err := tx.Enqueue("out", k, []byte(`{}`)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := s.KeepClusters([]string{"east"}, "east")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := s.PendingAfter("out", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Key)
	}
	var want []string
	for _, k := range keys {
		want = append(want, "east:"+k)
	}
	if !slices.Equal(got, want) || kept.AdoptedQueued != len(keys) {
		t.Errorf("queued keys after adoption (%d adopted):\n%q\nwant\n%q", kept.AdoptedQueued, got, want)
	}
}

// The one cluster's waits of timed rules become the adopting cluster's,
// as its records do: a config that gains clusters neither restarts nor
// loses a wait. A named cluster's waits keep their keys.
func TestKeepClustersAdoptsTheWaits(t *testing.T) {
	t.Parallel()
	s := clusterFile(t, "")
	since := time.Unix(1_800_000_000, 0).UTC()
	pending := timed.State{Holding: true, Since: since}
	one, west := "apps/deployments/ns/x\x00stuck", "west:apps/deployments/ns/y\x00stuck"
	if err := s.Update(func(tx *Tx) error {
		if err := tx.PutWait(one, pending); err != nil {
			return err
		}
		return tx.PutWait(west, pending)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.KeepClusters([]string{"east", "west"}, "east"); err != nil {
		t.Fatal(err)
	}
	got := map[string]timed.State{}
	_ = s.View(func(tx *Tx) error {
		return tx.ForEachWait(func(key string, st timed.State, _ bool) error { got[key] = st; return nil })
	})
	want := map[string]timed.State{"east:" + one: pending, west: pending}
	if len(got) != len(want) || got["east:"+one] != pending || got[west] != pending {
		t.Errorf("waits after the adoption %v, want %v", got, want)
	}
}

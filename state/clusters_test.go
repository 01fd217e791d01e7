package state

import (
	"path/filepath"
	"slices"
	"testing"
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

package state

import (
	"path/filepath"
	"testing"
)

// A new shard's mark with clusters holds for the first watches of each
// cluster it names, once each, and for no other cluster.
func TestAdoptNewShardPerCluster(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetMovedFrom(MovedFrom{Count: 2}, true, "east", "west"); err != nil {
		t.Fatal(err)
	}
	scope := func(c string) []Scope {
		return []Scope{{Resource: Resource{Cluster: c, Resource: "configmaps"}, Namespace: "ns"}}
	}
	for _, step := range []struct {
		cluster string
		want    bool
	}{{"west", true}, {"west", false}, {"south", false}, {"east", true}, {"east", false}} {
		err := s.Update(func(tx *Tx) error {
			got, err := tx.AdoptNewShard(scope(step.cluster))
			if got != step.want {
				t.Errorf("%s adopted %v, want %v", step.cluster, got, step.want)
			}
			if got && !tx.Resharded(scope(step.cluster)[0]) {
				t.Errorf("%s's scope is not resharded", step.cluster)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	_ = s.View(func(tx *Tx) error {
		if tx.NewShard() {
			t.Error("the mark outlives its clusters")
		}
		return nil
	})
}

package state

import (
	"path/filepath"
	"testing"
	"time"
)

// What a reshard keeps of the previous spec's ends stays until the next
// reshard; a new shard's mark takes its first scopes without a baseline as
// resharded, once.
func TestMovedFromAndAdoptNewShard(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Reshard("2/3 by uid", func(string, string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	end := time.Unix(1_800_000_000, 0)
	m := MovedFrom{Count: 2}
	m.SetEnd(1, end)
	if err := s.SetMovedFrom(m, true); err != nil {
		t.Fatal(err)
	}
	res := Resource{Resource: "configmaps"}
	listed, other := res.In("a"), Resource{Resource: "secrets"}.In("")
	_ = s.Update(func(tx *Tx) error { return tx.SetBaseline(other) })
	for round := range 2 {
		err = s.Update(func(tx *Tx) error {
			adopted, err := tx.AdoptNewShard([]Scope{listed, other})
			if adopted != (round == 0) {
				t.Errorf("round %d: adopted %v", round, adopted)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	_ = s.View(func(tx *Tx) error {
		got, ok := tx.MovedFrom()
		if at, known := got.End(1); !ok || got.Count != 2 || !known || !at.Equal(end) {
			t.Errorf("moved from %+v (%v)", got, ok)
		}
		if _, known := got.End(0); known {
			t.Error("an end no Lease told of is known")
		}
		if !tx.HasBaseline(listed) || !tx.Resharded(listed) {
			t.Error("the new shard's scope is not taken as resharded")
		}
		if tx.Resharded(other) {
			t.Error("a scope with a baseline of its own is marked resharded")
		}
		return nil
	})
	if _, err := s.Reshard("0/4 by uid", func(string, string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	_ = s.View(func(tx *Tx) error {
		if _, ok := tx.MovedFrom(); ok {
			t.Error("a new reshard keeps what the one before it knew")
		}
		return nil
	})
}

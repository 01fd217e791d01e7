package state

import (
	"path/filepath"
	"testing"
)

// A reshard drops the records of objects another shard owns now and marks
// the baselines; the same spec again changes nothing.
func TestReshard(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res := Resource{Resource: "configmaps"}
	scope := res.In("")
	err = s.Update(func(tx *Tx) error {
		for _, uid := range []string{"mine", "theirs"} {
			if err := tx.Put(res, uid, &Record{Namespace: "ns", Name: uid, ResourceVersion: "1"}); err != nil {
				return err
			}
		}
		return tx.SetBaseline(scope)
	})
	if err != nil {
		t.Fatal(err)
	}
	owns := func(uid, ns string) bool { return uid == "mine" && ns == "ns" }
	r, err := s.Reshard("0/2 by uid", owns)
	if err != nil || r == nil || r.Dropped != 1 || r.From != "" {
		t.Fatalf("reshard = %+v, %v; want one record dropped", r, err)
	}
	_ = s.View(func(tx *Tx) error {
		if got, _ := tx.Get(res, "theirs"); got != nil {
			t.Error("the record of another shard's object is kept")
		}
		if got, _ := tx.Get(res, "mine"); got == nil {
			t.Error("the shard's own record is gone")
		}
		if !tx.HasBaseline(scope) || !tx.Resharded(scope) {
			t.Error("the baseline is not marked resharded")
		}
		return nil
	})
	if r, err := s.Reshard("0/2 by uid", owns); r != nil || err != nil {
		t.Errorf("the same spec again: %+v, %v", r, err)
	}
	_ = s.Update(func(tx *Tx) error { return tx.SetBaseline(scope) })
	_ = s.View(func(tx *Tx) error {
		if tx.Resharded(scope) {
			t.Error("a complete list's baseline is still marked resharded")
		}
		return nil
	})
}

package state

import (
	"path/filepath"
	"slices"
	"testing"
)

// A reshard sets the records of objects now another shard's aside; settled,
// those of objects gone are records again (their deletes replay), the
// others dropped.
func TestMovedAwaySettled(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res := Resource{Resource: "configmaps"}
	err = s.Update(func(tx *Tx) error {
		for _, uid := range []string{"mine", "moved", "moved-gone"} {
			if err := tx.Put(res, uid, &Record{Namespace: "ns", Name: uid, ResourceVersion: "1"}); err != nil {
				return err
			}
		}
		return tx.SetBaseline(res.In("ns"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reshard("0/2 by uid", func(uid, _ string) bool { return uid == "mine" }); err != nil {
		t.Fatal(err)
	}
	from, away, err := s.MovedAway()
	if err != nil || from != "" || len(away[res]) != 2 {
		t.Fatalf("moved away from %q: %v, %v", from, away, err)
	}
	if got := s.Namespaces(res); !slices.Equal(got, []string{"ns"}) {
		t.Errorf("namespaces %v", got)
	}
	if err := s.SettleMovedAway(res, []string{"moved-gone"}); err != nil {
		t.Fatal(err)
	}
	_ = s.View(func(tx *Tx) error {
		for uid, want := range map[string]bool{"mine": true, "moved": false, "moved-gone": true} {
			if got, _ := tx.Get(res, uid); (got != nil) != want {
				t.Errorf("record of %s kept %v, want %v", uid, got != nil, want)
			}
		}
		return nil
	})
	if _, away, _ := s.MovedAway(); len(away) != 0 {
		t.Errorf("still set aside: %v", away)
	}
	if err := s.DropMovedAway(); err != nil {
		t.Fatal(err)
	}
}

// What SetListedAfter keeps stays with the records set aside, and goes
// with them; without any set aside nothing is kept.
func TestListedAfter(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetListedAfter("5"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.ListedAfter(); ok {
		t.Error("kept with nothing set aside")
	}
	res := Resource{Resource: "configmaps"}
	_ = s.Update(func(tx *Tx) error { return tx.Put(res, "u1", &Record{Namespace: "a", Name: "x", ResourceVersion: "1"}) })
	if _, err := s.Reshard("0/2 by uid", func(string, string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reshard("0/3 by uid", func(string, string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if _, away, _ := s.MovedAway(); len(away[res]) != 1 {
		t.Fatalf("set aside: %v", away)
	}
	if err := s.SetListedAfter("42"); err != nil {
		t.Fatal(err)
	}
	if rv, ok := s.ListedAfter(); !ok || rv != "42" {
		t.Errorf("ListedAfter = %q, %v", rv, ok)
	}
	if _, away, _ := s.MovedAway(); len(away) != 1 {
		t.Errorf("the note taken for a resource: %v", away)
	}
	if err := s.DropMovedAway(); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.ListedAfter(); ok {
		t.Error("kept after the records set aside went")
	}
}

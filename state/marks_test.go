package state

import (
	"maps"
	"path/filepath"
	"testing"
)

// A scope's mark is the highest resourceVersion of its records (all of the
// resource's for a watch of all namespaces, the namespace's for one of a
// namespace), as a number, not as text; a scope without records, or of a
// resource whose resourceVersions are not decimal, has none; a resource
// without a baseline has none. Marks survive SetMovedFrom and are read back
// per scope covering an object's namespace.
func TestMarks(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cms, secrets, odd, none := Resource{Resource: "configmaps"}, Resource{Resource: "secrets"}, Resource{Group: "x.io", Resource: "odd"}, Resource{Resource: "pods"}
	named := Resource{Cluster: "east", Resource: "configmaps"}
	err = s.Update(func(tx *Tx) error {
		for _, p := range []struct {
			res     Resource
			uid, ns string
			rv      string
		}{
			{cms, "1", "a", "9"}, {cms, "2", "a", "10"}, {cms, "3", "b", "7"},
			{secrets, "4", "a", "100"}, {secrets, "5", "b", "99"},
			{odd, "6", "a", "12"}, {odd, "7", "a", "not-a-number"},
			{none, "8", "a", "5"},
			{named, "9", "a", "3"},
		} {
			if err := tx.Put(p.res, p.uid, &Record{Namespace: p.ns, Name: p.uid, ResourceVersion: p.rv}); err != nil {
				return err
			}
		}
		for _, sc := range []Scope{cms.In(""), secrets.In("b"), secrets.In("c"), odd.In(""), named.In("a")} {
			if err := tx.SetBaseline(sc); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Marks()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/configmaps/": "10", "/secrets/b": "99", "east:/configmaps/a": "3"}
	if !maps.Equal(got, want) {
		t.Errorf("Marks() = %v, want %v", got, want)
	}

	m := MovedFrom{Count: 2}
	m.SetMarks(1, got)
	if _, err := s.Reshard("0/2 by uid", func(string, string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMovedFrom(m, false); err != nil {
		t.Fatal(err)
	}
	_ = s.View(func(tx *Tx) error {
		kept, ok := tx.MovedFrom()
		if !ok {
			t.Fatal("no MovedFrom kept")
		}
		for _, c := range []struct {
			index int
			res   Resource
			ns    string
			rv    uint64
			ok    bool
		}{
			{1, cms, "z", 10, true}, {1, secrets, "b", 99, true}, {1, secrets, "a", 0, false},
			{1, named, "a", 3, true}, {1, named, "b", 0, false}, {0, cms, "a", 0, false}, {1, odd, "a", 0, false},
		} {
			if rv, ok := kept.Mark(c.index, c.res, c.ns); rv != c.rv || ok != c.ok {
				t.Errorf("Mark(%d, %s, %q) = %d, %v; want %d, %v", c.index, c.res, c.ns, rv, ok, c.rv, c.ok)
			}
		}
		return nil
	})
}

// A scope's first list is kept once per shard spec: a later list of it
// (a restart) does not replace it, a new scope is added, and a reshard or
// a forgotten file starts again.
func TestKeepFirstLists(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.KeepFirstLists(map[string]string{"/configmaps/a": "10", "/secrets/": ""})
	if err != nil || !maps.Equal(got, map[string]string{"/configmaps/a": "10"}) {
		t.Fatalf("first: %v, %v", got, err)
	}
	got, _ = s.KeepFirstLists(map[string]string{"/configmaps/a": "20", "/secrets/": "21"})
	if want := map[string]string{"/configmaps/a": "10", "/secrets/": "21"}; !maps.Equal(got, want) {
		t.Errorf("again: %v, want %v", got, want)
	}
	if _, err := s.Reshard("0/2 by uid", func(string, string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.KeepFirstLists(map[string]string{"/configmaps/a": "30"}); !maps.Equal(got, map[string]string{"/configmaps/a": "30"}) {
		t.Errorf("after a reshard: %v", got)
	}
	if _, err := s.Forget(); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.KeepFirstLists(nil); len(got) != 0 {
		t.Errorf("after Forget: %v", got)
	}
}

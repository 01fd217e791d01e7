package state

import (
	"path/filepath"
	"slices"
	"testing"
)

// Prune keeps the baselines of the watched scopes, the records of watched
// resources in the watched namespaces, and nothing else.
func TestPrune(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cms, deps, pods := Resource{Resource: "configmaps"}, Resource{Group: "apps", Resource: "deployments"}, Resource{Resource: "pods"}
	err = s.Update(func(tx *Tx) error {
		for _, r := range []Resource{cms, deps, pods} {
			for _, ns := range []string{"a", "b"} {
				if err := tx.Put(r, r.Resource+"-"+ns, &Record{Namespace: ns, Name: "x"}); err != nil {
					return err
				}
				if err := tx.SetBaseline(r.In(ns)); err != nil {
					return err
				}
			}
		}
		return tx.Prune([]Scope{cms.In("a"), deps.In(""), deps.In("b")})
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.View(func(tx *Tx) error {
		var kept []string
		for _, r := range tx.Resources() {
			_ = tx.ForEach(r, func(uid string, _ *Record) error { kept = append(kept, uid); return nil })
		}
		if want := []string{"configmaps-a", "deployments-a", "deployments-b"}; !slices.Equal(kept, want) {
			t.Errorf("records kept %v, want %v", kept, want)
		}
		for _, c := range []struct {
			s    Scope
			want bool
		}{{cms.In("a"), true}, {cms.In("b"), false}, {deps.In("a"), false}, {deps.In("b"), true}, {pods.In("a"), false}} {
			if got := tx.HasBaseline(c.s); got != c.want {
				t.Errorf("baseline of %s: %v, want %v", c.s, got, c.want)
			}
		}
		return nil
	})
}

package state

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// The keys of the one cluster are those files have always held; a named
// cluster's keys are its own, and read back as they were written.
func TestKeys(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		res       Resource
		key, base string
	}{
		{Resource{Resource: "configmaps"}, "/configmaps", "/configmaps/ns"},
		{Resource{Group: "apps", Resource: "deployments"}, "apps/deployments", "apps/deployments/ns"},
		{Resource{Cluster: "east", Group: "apps", Resource: "deployments"}, "east:apps/deployments", "east:apps/deployments/ns"},
		{Resource{Cluster: "a:b", Resource: "configmaps"}, "a:b:/configmaps", "a:b:/configmaps/ns"},
	} {
		if got := c.res.String(); got != c.key {
			t.Errorf("%#v: key %q, want %q", c.res, got, c.key)
		}
		if got := c.res.In("ns").String(); got != c.base {
			t.Errorf("%#v: baseline key %q, want %q", c.res, got, c.base)
		}
		if got, ok := parseResource(c.key); !ok || got != c.res {
			t.Errorf("parseResource(%q) = %#v, %v", c.key, got, ok)
		}
	}
	for _, bad := range []string{"configmaps", "a/b/c"} {
		if r, ok := parseResource(bad); ok {
			t.Errorf("parseResource(%q) = %#v", bad, r)
		}
	}
}

// The typed keys land in the file as the string keys of earlier builds did:
// a file they wrote reads the same.
func TestKeysOnDisk(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	deps := Resource{Group: "apps", Resource: "deployments"}
	err = s.Update(func(tx *Tx) error {
		if err := tx.Put(deps, "u1", &Record{Name: "a"}); err != nil {
			return err
		}
		return tx.SetBaseline(Resource{Resource: "configmaps"}.In("ns"))
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketObjects).Bucket([]byte("apps/deployments")); b == nil || b.Get([]byte("u1")) == nil {
			t.Error("no record under apps/deployments")
		}
		if tx.Bucket(bucketBaseline).Get([]byte("/configmaps/ns")) == nil {
			t.Error("no baseline under /configmaps/ns")
		}
		return nil
	})
}

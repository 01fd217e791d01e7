package state

import "testing"

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

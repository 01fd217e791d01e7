package config

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// validateClusters checks the clusters (a unique DNS label each) and the
// clusters every rule names (each one of them).
func (c *Config) validateClusters(v *validator) {
	seen := map[string]int{}
	for i, cl := range c.Clusters {
		p := fmt.Sprintf("clusters[%d]", i)
		if cl.Name != "" {
			if errs := validation.IsDNS1123Label(cl.Name); len(errs) > 0 {
				v.errf(p+".name", "invalid cluster name %q: %s", cl.Name, errs[0])
			}
		}
		checkUnique(v, p, "cluster", cl.Name, seen, i)
	}
	names := slices.Compact(slices.Sorted(slices.Values(c.ClusterNames())))
	names = slices.DeleteFunc(names, func(n string) bool { return n == "" })
	for i, r := range c.Rules {
		for j, name := range r.Clusters {
			p := fmt.Sprintf("rules[%d].clusters[%d]", i, j)
			switch {
			case len(c.Clusters) == 0:
				v.errf(p, "cluster %q named, but no clusters are defined (define them under clusters)", name)
			case !slices.Contains(names, name):
				v.errf(p, "undefined cluster %q (want one of %s)", name, strings.Join(names, ", "))
			}
		}
	}
}

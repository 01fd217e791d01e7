package config

import "fmt"

// validateHealth checks the health list: each entry names a kind, has an
// expression, and no kind is given twice (which of two would apply is not
// clear). The expressions are compiled, and checked, by package health.
func (c *Config) validateHealth(v *validator) {
	seen := map[[2]string]int{}
	for i, h := range c.Health {
		p := fmt.Sprintf("health[%d]", i)
		if h.Kind == "" {
			v.errf(p+".kind", "required: the kind this health is of")
		}
		if h.CEL == "" {
			v.errf(p+".cel", "required: a CEL expression over object yielding Current, InProgress, Failed, Terminating or Unknown")
		}
		if h.Kind == "" {
			continue
		}
		k := [2]string{h.Group, h.Kind}
		if j, dup := seen[k]; dup {
			v.errf(p, "duplicate health of group %q kind %s (first given at health[%d])", h.Group, h.Kind, j)
			continue
		}
		seen[k] = i
	}
}

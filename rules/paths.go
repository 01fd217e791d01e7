package rules

import (
	"slices"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/health"
	"github.com/dynwatch/dynwatch/payload"
)

// Paths returns every path the rule reads from objects: conditions, changed and
// fields; a path under health. stands for the object paths health reads.
func (r *Rule) Paths() []string {
	var ps []string
	for _, p := range r.paths() {
		if root, _, ok := event.DerivedRoot(p); ok && root == event.HealthRoot {
			hp := r.healthPaths
			if hp == nil {
				hp = health.Paths(nil)
			}
			ps = append(ps, hp...)
			continue
		}
		ps = append(ps, p)
	}
	return ps
}

// SetHealthPaths tells the rule what the config's health reads
// (health.Paths of its Checker: a kind's own CEL may read more than the
// generic rules), for Paths.
func (r *Rule) SetHealthPaths(ps []string) { r.healthPaths = ps }

// paths are the paths the rule's checks and fields name, health.* included.
func (r *Rule) paths() []string {
	var ps []string
	for _, c := range r.conds {
		ps = append(ps, c.paths()...)
	}
	ps = append(ps, r.changed...)
	for _, f := range r.fields {
		ps = append(ps, f.Path)
	}
	return ps
}

// ReadsHealth reports whether a condition or a field of the rule reads the
// object's health: its payloads then carry "health".
func (r *Rule) ReadsHealth() bool {
	return slices.ContainsFunc(r.paths(), func(p string) bool {
		root, _, ok := event.DerivedRoot(p)
		return ok && root == event.HealthRoot
	})
}

// FieldNames returns the names of the rule's fields, sorted.
func (r *Rule) FieldNames() []string {
	names := make([]string, len(r.fields))
	for i, f := range r.fields {
		names[i] = f.Name
	}
	return names
}

// Payload builds the payload of the prepared event for r; transition is the
// Verdict's (for fire: enter, exit and edges).
func (r *Rule) Payload(p *payload.Prepared, transition string) *event.Payload {
	pl := payload.Build(p, r.Name, r.fields)
	pl.Transition = transition
	if r.readsHealth {
		pl.Health = p.Health()
	}
	return pl
}

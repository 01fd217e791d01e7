package tail

import (
	"log/slog"
	"strings"
	"sync"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/rules"
)

// probe watches the initial list for filters that cannot match: a --where
// path that no listed object has, a --where-cel expression that never yielded
// true or false (a missing key, say). Such a filter makes tail silent, which
// looks like nothing happening; after the initial list, tail says so once.
// A --columns path that no listed object has gets the same word: its column
// would read <none> throughout. With a name (tail TYPE NAME), it also notes
// whether an object of that name was listed.
type probe struct {
	mu      sync.Mutex
	done    bool
	objects int
	checks  []*probeCheck
	name    string // tail TYPE NAME's name; "" without one
	named   bool   // an object of that name was listed
}

// probeCheck is one filter or column the probe follows.
type probeCheck struct {
	spec   config.ConditionSpec
	column string      // the --columns name, for a column's path
	found  int         // path: objects that have it
	cel    *rules.Rule // CEL: the expression alone, to count its errors
}

// newProbe follows the filters of where that can be missed: paths (except
// notExists, which a missing path satisfies) and CEL expressions (except those
// that read oldObject, which no object of the initial list has).
func newProbe(where []config.ConditionSpec, columns []Column, name string) *probe {
	p := &probe{name: name}
	for _, c := range columns {
		if isActorPath(c.Path) {
			continue
		}
		p.checks = append(p.checks, &probeCheck{spec: config.ConditionSpec{Path: c.Path}, column: c.Name})
	}
	for _, cs := range where {
		c := &probeCheck{spec: cs}
		switch {
		case strings.Contains(cs.CEL, "oldObject"):
			// The initial list has no old objects: such an expression errs on
			// every listed object, yet updates can satisfy it.
			continue
		case cs.CEL != "":
			r, err := rules.CompileRule(config.RuleSpec{Name: RuleName, Resources: []config.Selector{{Resource: "*"}},
				When: []config.ConditionSpec{cs}, Actions: []string{RuleName}, OnStart: config.OnStartAll})
			if err != nil {
				continue // tail's own rule has reported it
			}
			c.cel = r
		case cs.Op == "notExists" || cs.Path == "" || isActorPath(cs.Path):
			continue
		}
		p.checks = append(p.checks, c)
	}
	return p
}

// isActorPath reports whether path reads the change's actor, which no
// object of the initial list (an add) has, yet every update and delete may.
func isActorPath(path string) bool {
	root, _, ok := event.DerivedRoot(path)
	return ok && root == event.ActorRoot
}

// observe counts an event of the initial list.
func (p *probe) observe(ev *event.Event) {
	if ev.Origin != event.InitialList || (len(p.checks) == 0 && p.name == "") {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.objects++
	p.named = p.named || (p.name != "" && ev.Name == p.name)
	for _, c := range p.checks {
		if c.cel != nil {
			c.cel.Holds(ev)
		} else if ev.Get(false, c.spec.Path).Exists() {
			c.found++
		}
	}
}

// listedName reports whether an object of the probe's name was listed; call
// it once the initial list has been observed.
func (p *probe) listedName() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.named
}

// report warns, once, about each filter no listed object could satisfy; it
// stops the counting.
func (p *probe) report(log *slog.Logger) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.done = true
	if p.objects == 0 {
		return
	}
	for _, c := range p.checks {
		switch {
		case c.cel != nil && c.cel.CELErrors() >= uint64(p.objects):
			log.Warn("--where-cel yielded no true or false on any object listed (an error, such as a missing key, counts as false): nothing can match it",
				"expr", c.spec.CEL, "objects", p.objects)
		case c.column != "" && c.found == 0:
			log.Warn("--columns path is missing on every object listed: its column reads <none> until one has it",
				"column", c.column, "path", c.spec.Path, "objects", p.objects)
		case c.cel == nil && c.found == 0:
			log.Warn("--where path is missing on every object listed: nothing can match it until one has it",
				"path", c.spec.Path, "objects", p.objects)
		}
	}
}

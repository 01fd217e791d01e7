package action

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dynwatch/dynwatch/event"
)

// maxChatObjects is how many of a group's events its chat message lists; the
// rest are counted ("and N more").
const maxChatObjects = 5

// groupSummary is a grouped delivery's chat message, one for the whole group:
// how many events of what ("12 events: 10 add, 2 update of configmaps in
// namespace a"), the group's labels, the first few events and how many more.
func groupSummary(g *event.GroupPayload) (string, []chatFact) {
	what := groupWhat(g)
	title := what
	if r := groupRule(g); r != "" {
		title = r + ": " + what
	}
	var facts []chatFact
	if r := groupRule(g); r != "" {
		facts = append(facts, chatFact{"Rule", r})
	}
	if len(g.Group) > 0 {
		facts = append(facts, chatFact{"Group", groupLabelList(g.Group)})
	}
	facts = append(facts, chatFact{"Events", what})
	facts = append(facts, chatFact{"Objects", groupObjects(g.Events)})
	return title, facts
}

// groupWhat says how many events of which types, resources and namespaces.
func groupWhat(g *event.GroupPayload) string {
	n := len(g.Events)
	counts := map[event.Type]int{}
	var resources, namespaces []string
	opened, resolved := 0, 0
	for _, p := range g.Events {
		counts[p.Type]++
		if !slices.Contains(resources, p.Resource.Resource) {
			resources = append(resources, p.Resource.Resource)
		}
		if p.Namespace != "" && !slices.Contains(namespaces, p.Namespace) {
			namespaces = append(namespaces, p.Namespace)
		}
		switch p.Transition {
		case "enter":
			opened++
		case "exit":
			resolved++
		}
	}
	var types []string
	for _, t := range []event.Type{event.Add, event.Update, event.Delete} {
		if counts[t] > 0 {
			types = append(types, fmt.Sprintf("%d %s", counts[t], t))
		}
	}
	s := fmt.Sprintf("%d events", n)
	if n == 1 {
		s = "1 event"
	}
	if opened+resolved > 0 {
		s += fmt.Sprintf(" (%d opened, %d resolved)", opened, resolved)
	}
	s += ": " + strings.Join(types, ", ") + " of " + listOrCount(resources, "resources")
	switch len(namespaces) {
	case 0:
	case 1:
		s += " in namespace " + namespaces[0]
	default:
		s += " in " + listOrCount(namespaces, "namespaces")
	}
	return s
}

// listOrCount lists up to three names, or says how many there are.
func listOrCount(names []string, what string) string {
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%d %s", len(names), what)
}

// groupLabelList spells a group's labels as "namespace=a, rule=r", sorted.
func groupLabelList(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, ", ")
}

// groupObjects lists the first maxChatObjects events, one a line, and how
// many more there are.
func groupObjects(events []*event.Payload) string {
	var b strings.Builder
	for i, p := range events {
		if i == maxChatObjects {
			fmt.Fprintf(&b, "\nand %d more", len(events)-i)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(clip(objectLine(p), 300))
	}
	return b.String()
}

// objectLine is one event as a group's message lists it: "add ConfigMap
// a/cm-1", or "opened Deployment prod/api" for a transition.
func objectLine(p *event.Payload) string {
	obj := p.Name
	if p.Namespace != "" {
		obj = p.Namespace + "/" + p.Name
	}
	what := string(p.Type)
	if s := transitionWord(p.Transition); s != "" {
		what = s
	}
	return what + " " + p.Resource.Kind + " " + obj
}

package health

import (
	"fmt"
	"strings"

	"github.com/dynwatch/dynwatch/editdist"
)

// ParseStatuses reads a comma-separated list of statuses (audit --health
// Failed,InProgress). A name is matched without case and given back as
// Statuses spell it; an unknown one is an error, with the nearest status.
func ParseStatuses(s string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(s, ",") {
		name := strings.TrimSpace(part)
		if name == "" {
			continue
		}
		found := ""
		for _, st := range Statuses {
			if strings.EqualFold(name, st) {
				found = st
			}
		}
		if found == "" {
			hint := ""
			if c := editdist.Closest(name, Statuses); c != "" {
				hint = fmt.Sprintf(", did you mean %q?", c)
			}
			return nil, fmt.Errorf("unknown health status %q%s (want any of %s)", name, hint, strings.Join(Statuses, ", "))
		}
		out = append(out, found)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("want a status: any of %s, comma-separated", strings.Join(Statuses, ", "))
	}
	return out, nil
}

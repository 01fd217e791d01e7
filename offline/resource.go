package offline

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/rules"
)

// ResourceOf names the object's resource offline: group and version from its
// apiVersion, kind from its kind, the plural from the rule's selector when it
// names one exactly (else guessed from the kind), and whether it is namespaced
// (built-in cluster-scoped kinds are known; any other kind is namespaced).
func ResourceOf(obj []byte, r *rules.Rule) event.Resource {
	kind := gjson.GetBytes(obj, "kind").Str
	res := event.Resource{Kind: kind, Namespaced: gjson.GetBytes(obj, "metadata.namespace").Str != "" || !discovery.ClusterScoped(kind)}
	av := gjson.GetBytes(obj, "apiVersion").Str
	if g, v, ok := strings.Cut(av, "/"); ok {
		res.Group, res.Version = g, v
	} else {
		res.Version = av
	}
	res.Resource = discovery.Plural(kind)
	for _, s := range r.Selectors {
		if s.Resource != "" && !strings.ContainsAny(s.Resource, "*?[") && s.MatchesObject(res.Group, res.Version, kind) {
			res.Resource = s.Resource
			break
		}
	}
	return res
}

package watcher

import (
	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/discovery"
)

// crdServed reports whether cat serves the resource of crd (a
// CustomResourceDefinition's JSON) exactly as the CRD says: under its group
// and plural, every version it serves and no other, each with its kind and
// scope; and the CRD is not being deleted.
//
// The CRD watch starts after the first catalog is read, so its initial list
// holds every CRD as it is since: one that the catalog serves so needs no
// discovery refresh (without this check every start read discovery twice
// more for nothing: the refresh after a change, and the one a moment
// later). One made or changed in between fails the check, and a change
// after the list comes as a live event, which always asks for a refresh.
// Only a CRD deleted in between is in neither: its resource stays in the
// catalog until the periodic refresh (DiscoveryRefresh, 30 s), and its
// watch reports the resource not found meanwhile.
func crdServed(cat *discovery.Catalog, crd []byte) bool {
	if cat == nil {
		return false
	}
	r := gjson.GetManyBytes(crd, "spec.group", "spec.names.plural", "spec.names.kind", "spec.scope", "spec.versions", "metadata.deletionTimestamp")
	group, plural, kind, namespaced := r[0].Str, r[1].Str, r[2].Str, r[3].Str == "Namespaced"
	if plural == "" || r[5].Exists() {
		return false
	}
	served := map[string]bool{}
	r[4].ForEach(func(_, v gjson.Result) bool {
		if v.Get("served").Bool() {
			served[v.Get("name").Str] = true
		}
		return true
	})
	n := 0
	for _, res := range cat.Resources {
		if res.Group != group || res.Resource != plural {
			continue
		}
		if !served[res.Version] || res.Kind != kind || res.Namespaced != namespaced {
			return false
		}
		n++
	}
	return n == len(served)
}

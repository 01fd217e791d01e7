package plan

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/rules"
)

// Plan is what a config resolves to against one catalog.
type Plan struct {
	// Rules maps each rule to the resources it selects.
	Rules map[string][]discovery.Resource
	// Watches are the informers needed: one per resource and namespace scope.
	Watches []dyninformer.Watch
	// Index maps each watched resource to the rules that select it.
	Index map[schema.GroupVersionResource][]*rules.Rule
}

// Resolve computes the plan of file against cat. A resource selected by several
// rules or selectors is watched once; when any rule wants all namespaces of a
// resource, one all-namespaces informer serves every rule on it.
func Resolve(file *File, cat *discovery.Catalog) *Plan {
	p := &Plan{Rules: map[string][]discovery.Resource{}, Index: map[schema.GroupVersionResource][]*rules.Rule{}}
	type scope struct {
		res discovery.Resource
		all bool
		nss map[string]bool
	}
	scopes := map[schema.GroupVersionResource]*scope{}
	var order []schema.GroupVersionResource
	for _, r := range file.Rules {
		resolved := cat.Resolve(r.Selectors...)
		p.Rules[r.Name] = resolved
		for _, res := range resolved {
			gvr := res.GVR()
			s, ok := scopes[gvr]
			if !ok {
				s = &scope{res: res, nss: map[string]bool{}}
				scopes[gvr] = s
				order = append(order, gvr)
			}
			p.Index[gvr] = append(p.Index[gvr], r)
			if r.Namespaces == nil || !res.Namespaced {
				s.all = true
			}
			for _, ns := range r.Namespaces {
				s.nss[ns] = true
			}
		}
	}
	for _, gvr := range order {
		s := scopes[gvr]
		if s.all {
			p.Watches = append(p.Watches, dyninformer.Watch{Resource: s.res.Ref()})
			continue
		}
		for _, ns := range slices.Sorted(maps.Keys(s.nss)) {
			p.Watches = append(p.Watches, dyninformer.Watch{Resource: s.res.Ref(), Namespace: ns})
		}
	}
	return p
}

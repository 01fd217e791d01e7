package state

import "strings"

// Resource names the records of one resource: its group and resource, not
// the version (a move to another version keeps them) nor the namespace
// (records follow the resource, whatever scopes the rules watch it in).
type Resource struct {
	// Cluster names the cluster when several share the file; "" is the one
	// cluster, whose keys are those a file has always had.
	Cluster  string
	Group    string
	Resource string
}

// String is the resource's key in the file: group/resource, after
// "CLUSTER:" for a named cluster (no group or resource holds a colon).
func (r Resource) String() string {
	k := r.Group + "/" + r.Resource
	if r.Cluster != "" {
		k = r.Cluster + ":" + k
	}
	return k
}

// In is the resource in the namespace scope ns ("" = all namespaces).
func (r Resource) In(ns string) Scope { return Scope{Resource: r, Namespace: ns} }

// Scope names a resource in one namespace scope: what a watch lists, and so
// what has a baseline.
type Scope struct {
	Resource
	// Namespace is the scope's namespace; "" = all namespaces.
	Namespace string
}

// String is the scope's key in the file: the resource's, then /namespace.
func (s Scope) String() string { return s.Resource.String() + "/" + s.Namespace }

// Covers reports whether an object in namespace ns is in the scope.
func (s Scope) Covers(ns string) bool { return s.Namespace == "" || ns == s.Namespace }

// parseResource reads a key that Resource.String wrote.
func parseResource(k string) (Resource, bool) {
	var r Resource
	if i := strings.LastIndexByte(k, ':'); i >= 0 {
		r.Cluster, k = k[:i], k[i+1:]
	}
	g, res, ok := strings.Cut(k, "/")
	if !ok || strings.Contains(res, "/") {
		return Resource{}, false
	}
	r.Group, r.Resource = g, res
	return r, true
}

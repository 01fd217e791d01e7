package dyninformer

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dynwatch/dynwatch/event"
)

// Key is one watch: a resource and a namespace ("" = all namespaces, and always
// "" for cluster-scoped resources).
type Key struct {
	GVR       schema.GroupVersionResource
	Namespace string
	// Cluster names the watch's cluster with several clusters; "" is the
	// one cluster. Each cluster has its own Manager: the field tells their
	// keys apart where they meet (restart state, health).
	Cluster string
}

// String spells the key as kubectl spells resources: resource.version.group,
// and the namespace when it is not all of them.
func (k Key) String() string {
	s := k.GVR.Resource + "." + k.GVR.Version
	if k.GVR.Group != "" {
		s += "." + k.GVR.Group
	}
	if k.Namespace != "" {
		s += " in namespace " + k.Namespace
	}
	if k.Cluster != "" {
		s += " in cluster " + k.Cluster
	}
	return s
}

// Watch asks for one informer.
type Watch struct {
	Resource  event.Resource
	Namespace string
	// Cluster is the watch's cluster (see Key.Cluster).
	Cluster string
}

// Key returns the watch's key.
func (w Watch) Key() Key {
	return Key{GVR: schema.GroupVersionResource{Group: w.Resource.Group, Version: w.Resource.Version, Resource: w.Resource.Resource}, Namespace: w.Namespace, Cluster: w.Cluster}
}

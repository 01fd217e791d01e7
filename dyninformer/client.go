package dyninformer

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// Client lists and watches any resource through client-go's REST client, with
// a decoder that keeps objects as JSON bytes (see Object). It is what a
// Manager's informers use in place of the dynamic client, which decodes every
// object into maps.
type Client struct {
	rest rest.Interface
	// shard, when sharded, is what the client keeps (WithShard, shardclient.go),
	// and server what it learnt of the servers' filtering.
	shard  Shard
	server *serverSharding
}

// NewClient returns a Client for the cluster of cfg.
func NewClient(cfg *rest.Config) (*Client, error) {
	c := rest.CopyConfig(cfg)
	c.ContentType = "application/json"
	c.AcceptContentTypes = "application/json"
	c.NegotiatedSerializer = rawSerializer{}
	c.GroupVersion = nil
	c.APIPath = "/"
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.UnversionedRESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return &Client{rest: rc}, nil
}

// path returns the URL path segments of a resource in a namespace ("" = all).
func path(gvr schema.GroupVersionResource, ns string) []string {
	p := []string{"api"}
	if gvr.Group != "" {
		p = []string{"apis", gvr.Group}
	}
	p = append(p, gvr.Version)
	if ns != "" {
		p = append(p, "namespaces", ns)
	}
	return append(p, gvr.Resource)
}

// List reads one page of a list.
func (c *Client) List(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (*List, error) {
	l := &List{}
	sharded := c.shardList(gvr, &opts)
	err := c.rest.Get().AbsPath(path(gvr, ns)...).
		SpecificallyVersionedParams(&opts, metav1.ParameterCodec, metav1.SchemeGroupVersion).
		Do(ctx).Into(l)
	if err != nil && c.shardRefused(gvr, &opts, err) {
		l = &List{}
		err = c.rest.Get().AbsPath(path(gvr, ns)...).
			SpecificallyVersionedParams(&opts, metav1.ParameterCodec, metav1.SchemeGroupVersion).
			Do(ctx).Into(l)
	}
	if err != nil {
		return nil, err
	}
	if sharded != nil {
		sharded(l)
	}
	return l, nil
}

// Watch opens a watch; its events carry *Object (bookmarks included) or, for
// errors, *metav1.Status.
func (c *Client) Watch(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	c.shardWatch(ctx, gvr, ns, &opts)
	w, err := c.rest.Get().AbsPath(path(gvr, ns)...).
		SpecificallyVersionedParams(&opts, metav1.ParameterCodec, metav1.SchemeGroupVersion).
		Watch(ctx)
	if err != nil {
		return nil, err
	}
	return c.filterWatch(w), nil
}

package dyninformer

import (
	"context"
	"net/http"

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
	// cfg and http are what rest was made of: WithShard makes the shard's
	// REST client of them, with a codec of its own.
	cfg  *rest.Config
	http *http.Client
	// shard, when sharded, is what the client keeps (WithShard, shardclient.go),
	// server what it learnt of the servers' filtering, and all the client of
	// everything it was made from (Unsharded).
	shard  Shard
	server *serverSharding
	all    *Client
}

// NewClient returns a Client for the cluster of cfg.
func NewClient(cfg *rest.Config) (*Client, error) {
	c := rest.CopyConfig(cfg)
	c.ContentType = "application/json"
	c.AcceptContentTypes = "application/json"
	c.NegotiatedSerializer = rawSerializer{}
	c.GroupVersion = nil
	c.APIPath = "/"
	c.Wrap(touchBodies) // a watch's liveness (touchbody.go)
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if _, _, err := rest.DefaultServerUrlFor(c); err != nil {
		return nil, err
	}
	hc, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, err
	}
	rc, err := rest.UnversionedRESTClientForConfigAndClient(c, hc)
	if err != nil {
		return nil, err
	}
	return &Client{rest: rc, cfg: c, http: hc}, nil
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
	if first := err; err != nil && c.shardRetry(&opts, err) {
		l = &List{}
		err = c.rest.Get().AbsPath(path(gvr, ns)...).
			SpecificallyVersionedParams(&opts, metav1.ParameterCodec, metav1.SchemeGroupVersion).
			Do(ctx).Into(l)
		c.shardRetried(gvr, first, err)
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
	c.shardWatch(gvr, &opts)
	w, err := c.rest.Get().AbsPath(path(gvr, ns)...).
		SpecificallyVersionedParams(&opts, metav1.ParameterCodec, metav1.SchemeGroupVersion).
		Watch(ctx)
	if first := err; err != nil && c.shardRetry(&opts, err) {
		w, err = c.rest.Get().AbsPath(path(gvr, ns)...).
			SpecificallyVersionedParams(&opts, metav1.ParameterCodec, metav1.SchemeGroupVersion).
			Watch(ctx)
		c.shardRetried(gvr, first, err)
	}
	if err != nil {
		return nil, err
	}
	return c.filterWatch(ctx, w, gvr, ns, opts.ShardSelector), nil
}

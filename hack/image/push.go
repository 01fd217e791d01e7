package main

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// push pushes the index in the OCI image layout dir (as build wrote it) to
// the registry as ref, with the credentials of the docker config (docker
// login, or a credential helper) when there are any. It returns the index's
// digest.
func push(ctx context.Context, dir, ref string, insecure bool) (v1.Hash, error) {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("push: %w", err)
	}
	idx, err := layoutIndex(dir)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remote.WriteIndex(r, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return v1.Hash{}, fmt.Errorf("push %s: %w", r, err)
	}
	return idx.Digest()
}

// layoutIndex is the one index the layout at dir holds (its index.json lists
// the index build wrote).
func layoutIndex(dir string) (v1.ImageIndex, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s (run make image first): %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("%s holds %d manifests, want the one index", dir, len(m.Manifests))
	}
	return top.ImageIndex(m.Manifests[0].Digest)
}

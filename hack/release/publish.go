package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"
)

// The media types `helm push` gives a chart's OCI manifest.
const (
	helmConfigType = "application/vnd.cncf.helm.config.v1+json"
	helmChartType  = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// publishOptions say what publish pushes where.
type publishOptions struct {
	version  string // vX.Y.Z, as build was given it
	dist     string // what build wrote
	root     string // the checkout
	registry string // host/path: the image is <registry>/dynwatch, the chart <registry>/charts/dynwatch
	insecure bool   // plain HTTP
}

// publish pushes the image index and the chart that build wrote into
// o.dist, and returns the references it pushed.
func publish(ctx context.Context, o publishOptions) ([]string, error) {
	image := o.registry + "/dynwatch:" + o.version
	args := []string{"run", "./hack/image", "push", "--from", filepath.Join(absOr(o.dist), imageLayout)}
	if o.insecure {
		args = append(args, "--insecure")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, image)...)
	cmd.Dir = o.root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("push the image (run make release VERSION=%s first): %w", o.version, err)
	}
	chart, err := pushChart(ctx, filepath.Join(o.dist, "dynwatch-"+chartVersion(o.version)+".tgz"), o.registry+"/charts", o.insecure)
	if err != nil {
		return nil, err
	}
	return []string{image, chart}, nil
}

func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// pushChart pushes the packaged chart at tgz to repo/<name>:<version> as
// `helm push tgz oci://repo` does: an OCI manifest whose config is the
// chart's metadata as JSON and whose one layer is the archive. It returns
// the oci:// reference `helm install` takes (with --version).
func pushChart(ctx context.Context, tgz, repo string, insecure bool) (string, error) {
	data, err := os.ReadFile(tgz)
	if err != nil {
		return "", fmt.Errorf("read the chart (run make release first): %w", err)
	}
	meta, err := chartMetadata(data)
	if err != nil {
		return "", fmt.Errorf("%s: %w", tgz, err)
	}
	var chart struct{ Name, Version string }
	if err := json.Unmarshal(meta, &chart); err != nil || chart.Name == "" || chart.Version == "" {
		return "", fmt.Errorf("%s: Chart.yaml has no name or version (%v)", tgz, err)
	}
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	// A tag cannot hold a +; Helm writes a version's build metadata with _.
	ref, err := name.ParseReference(repo+"/"+chart.Name+":"+strings.ReplaceAll(chart.Version, "+", "_"), opts...)
	if err != nil {
		return "", fmt.Errorf("chart reference: %w", err)
	}
	ropts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	config, layer := static.NewLayer(meta, helmConfigType), static.NewLayer(data, helmChartType)
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1,
		Annotations: map[string]string{
			"org.opencontainers.image.title": chart.Name, "org.opencontainers.image.version": chart.Version,
		}}
	for i, l := range []v1.Layer{config, layer} {
		if err := remote.WriteLayer(ref.Context(), l, ropts...); err != nil {
			return "", fmt.Errorf("push %s: %w", ref, err)
		}
		d, err := descriptor(l)
		if err != nil {
			return "", err
		}
		if i == 0 {
			m.Config = d
		} else {
			m.Layers = []v1.Descriptor{d}
		}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	if err := remote.Put(ref, rawManifest{raw, types.OCIManifestSchema1}, ropts...); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	return "oci://" + ref.Context().String() + " --version " + chart.Version, nil
}

func descriptor(l v1.Layer) (v1.Descriptor, error) {
	d, err := l.Digest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	size, err := l.Size()
	if err != nil {
		return v1.Descriptor{}, err
	}
	mt, err := l.MediaType()
	return v1.Descriptor{MediaType: mt, Digest: d, Size: size}, err
}

// rawManifest is a manifest pushed as it is written.
type rawManifest struct {
	raw []byte
	mt  types.MediaType
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.raw, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mt, nil }

// chartMetadata is the Chart.yaml of a packaged chart, as JSON (what Helm
// puts in the config blob).
func chartMetadata(tgz []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("no Chart.yaml")
		} else if err != nil {
			return nil, err
		}
		if parts := strings.Split(h.Name, "/"); len(parts) == 2 && parts[1] == "Chart.yaml" {
			y, err := io.ReadAll(tr)
			if err != nil {
				return nil, err
			}
			return yaml.YAMLToJSON(y)
		}
	}
}

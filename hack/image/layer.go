package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Image assembles the image for plat from scratch: /dynwatch, the CA bundle,
// and a passwd and group naming the non-root user it runs as; its labels and
// created time are meta's.
func Image(bin, caFile string, plat v1.Platform, meta metadata) (v1.Image, error) {
	data, err := layerTar(bin, caFile)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: meta.created}, CreatedBy: "hack/image", Comment: "dynwatch, the CA bundle, passwd and group",
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Variant = plat.Architecture, plat.OS, plat.Variant
	cf.Created = v1.Time{Time: meta.created}
	cf.Config.User = fmt.Sprintf("%d:%d", UID, UID)
	cf.Config.Entrypoint = []string{"/dynwatch"}
	cf.Config.Cmd = []string{"run", "--config", "/etc/dynwatch/config.yaml"}
	cf.Config.Env = []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	cf.Config.Labels = meta.labels
	return mutate.ConfigFile(img, cf)
}

// layerTar is the image's one layer: every entry's time is the epoch, so that
// the same files make the same layer.
func layerTar(bin, caFile string) ([]byte, error) {
	binData, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, UID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", UID)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	for _, d := range []string{"etc/", "etc/ssl/", "etc/ssl/certs/", "tmp/", "home/", "home/nonroot/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime}); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		name string
		data []byte
		mode int64
	}{
		{"dynwatch", binData, 0o755},
		{"etc/ssl/certs/ca-certificates.crt", ca, 0o644},
		{"etc/passwd", []byte(passwd), 0o644},
		{"etc/group", []byte(group), 0o644},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

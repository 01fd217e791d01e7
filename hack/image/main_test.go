package main

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

const caBundle = "/etc/ssl/certs/ca-certificates.crt"

var (
	buildOnce sync.Once
	built     struct {
		dir string
		err error
	}
)

// builtImage builds the image as `make image` does, once for every test of
// the package (two cross builds), into a directory TestMain removes.
func builtImage(t *testing.T) (layoutDir, tarPath string) {
	t.Helper()
	if _, err := os.Stat(caBundle); err != nil {
		t.Skip("no CA bundle on this machine to ship")
	}
	buildOnce.Do(func() {
		_, built.err = build(context.Background(), options{
			root: "../..", layout: filepath.Join(built.dir, "layout"), tarball: filepath.Join(built.dir, "image.tar"),
			tag: "dynwatch:test", ldflags: "-X main.version=test-image", caFile: caBundle,
			version: "test-image", source: "https://example.invalid/dynwatch",
			platforms: []string{"linux/amd64", "linux/arm64"},
		})
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return filepath.Join(built.dir, "layout"), filepath.Join(built.dir, "image.tar")
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dynwatch-image-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	built.dir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// commit is what the image must say about the commit it was built from.
func commit(t *testing.T) (rev string, created time.Time) {
	t.Helper()
	rev, err := git(context.Background(), "../..", "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	ct, err := git(context.Background(), "../..", "log", "-1", "--format=%ct")
	if err != nil {
		t.Fatal(err)
	}
	sec, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return rev, time.Unix(sec, 0).UTC()
}

// checkIndex checks that idx holds one image per platform, each with the
// labels and the created time of the commit, and returns them by platform.
func checkIndex(t *testing.T, idx v1.ImageIndex) map[string]v1.Image {
	t.Helper()
	rev, created := commit(t)
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	imgs := map[string]v1.Image{}
	for _, d := range m.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s has no platform", d.Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		p := d.Platform.OS + "/" + d.Platform.Architecture
		imgs[p] = img
		if cf.OS+"/"+cf.Architecture != p {
			t.Errorf("%s: the config says %s/%s", p, cf.OS, cf.Architecture)
		}
		if !cf.Created.Time.Equal(created) {
			t.Errorf("%s: created %v, want the commit's time %v", p, cf.Created.Time, created)
		}
		for k, want := range map[string]string{
			"org.opencontainers.image.source": "https://example.invalid/dynwatch", "org.opencontainers.image.version": "test-image",
			"org.opencontainers.image.revision": rev,
		} {
			if got := cf.Config.Labels[k]; got != want {
				t.Errorf("%s: label %s = %q, want %q", p, k, got, want)
			}
		}
		if cf.Config.User != "65532:65532" || strings.Join(cf.Config.Entrypoint, " ") != "/dynwatch" {
			t.Errorf("%s: user %q, entrypoint %v", p, cf.Config.User, cf.Config.Entrypoint)
		}
	}
	if len(imgs) != 2 || imgs["linux/amd64"] == nil || imgs["linux/arm64"] == nil {
		t.Fatalf("the index holds %d manifests for %v, want linux/amd64 and linux/arm64", len(m.Manifests), m.Manifests)
	}
	return imgs
}

// extract writes the image's files that are in want to dir and reports
// which of them the layer holds.
func extract(t *testing.T, img v1.Image, dir string) map[string]bool {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers: %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]bool{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		} else if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = true
		if h.Typeflag == tar.TypeReg {
			dst := filepath.Join(dir, filepath.FromSlash(h.Name))
			_ = os.MkdirAll(filepath.Dir(dst), 0o755)
			f, _ := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
			_, _ = io.Copy(f, tr)
			_ = f.Close()
		}
	}
}

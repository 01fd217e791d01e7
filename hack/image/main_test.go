package main

import (
	"archive/tar"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The image is built as `make image` builds it, read back from its tarball,
// and checked: non-root user, entrypoint, and that the binary in it runs.
func TestImage(t *testing.T) {
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err != nil {
		t.Skip("no CA bundle on this machine to ship")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "image.tar")
	wd, _ := os.Getwd()
	if err := os.Chdir("../.."); err != nil {
		t.Fatal(err)
	}
	err := build(out, "dynwatch:test", "-X main.version=test-image", "/etc/ssl/certs/ca-certificates.crt")
	_ = os.Chdir(wd)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || strings.Join(cf.Config.Entrypoint, " ") != "/dynwatch" || cf.OS != "linux" {
		t.Errorf("config: user %q, entrypoint %v, os %s", cf.Config.User, cf.Config.Entrypoint, cf.OS)
	}
	layers, _ := img.Layers()
	if len(layers) != 1 {
		t.Fatalf("%d layers", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]bool{}
	bin := filepath.Join(dir, "dynwatch")
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = true
		if h.Name == "dynwatch" {
			f, _ := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
			_, _ = io.Copy(f, tr)
			_ = f.Close()
		}
	}
	for _, want := range []string{"dynwatch", "etc/ssl/certs/ca-certificates.crt", "etc/passwd", "etc/group"} {
		if !files[want] {
			t.Errorf("the image lacks /%s", want)
		}
	}
	v, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(v), "dynwatch test-image") {
		t.Errorf("the binary in the image: %v: %s", err, v)
	}
	if out, err := exec.Command("go", "version", "-m", bin).CombinedOutput(); err != nil || !strings.Contains(string(out), "CGO_ENABLED=0") {
		t.Errorf("the binary is not static: %s", out)
	}
	if st, err := os.Stat(out); err == nil {
		size, _ := img.Size()
		t.Logf("image tarball %d MB; manifest+config %d bytes", st.Size()>>20, size)
	}
}

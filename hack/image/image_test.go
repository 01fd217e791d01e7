package main

import (
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The image is built as `make image` builds it and read back from its OCI
// layout: one index, linux/amd64 and linux/arm64, each a non-root image of
// the files dynwatch needs, labelled with the commit and created at its time,
// whose binary is static and stripped; the tarball is this machine's image.
func TestImage(t *testing.T) {
	t.Parallel()
	layoutDir, tarPath := builtImage(t)
	idx, err := layoutIndex(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	imgs := checkIndex(t, idx)
	for p, img := range imgs {
		dir := t.TempDir()
		files := extract(t, img, dir)
		for _, want := range []string{"dynwatch", "etc/ssl/certs/ca-certificates.crt", "etc/passwd", "etc/group"} {
			if !files[want] {
				t.Errorf("%s: the image lacks /%s", p, want)
			}
		}
		bin := filepath.Join(dir, "dynwatch")
		out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
		info := string(out)
		if err != nil || !strings.Contains(info, "CGO_ENABLED=0") || !strings.Contains(info, "-trimpath=true") ||
			!strings.Contains(info, "GOARCH="+strings.TrimPrefix(p, "linux/")) {
			t.Errorf("%s: the binary is not static, stripped and trimmed for its platform: %v\n%s", p, err, out)
		}
		if out, err := exec.Command("go", "tool", "nm", bin).CombinedOutput(); err == nil {
			t.Errorf("%s: the binary has a symbol table (not stripped): %.200s", p, out)
		}
		if p == "linux/"+runtime.GOARCH && runtime.GOOS == "linux" {
			v, err := exec.Command(bin, "version").CombinedOutput()
			if err != nil || !strings.Contains(string(v), "dynwatch test-image") {
				t.Errorf("the binary in the image: %v: %s", err, v)
			}
		}
		// The same files make the same image: nothing in it depends on when it was assembled.
		again, err := Image(bin, caBundle, v1.Platform{OS: "linux", Architecture: strings.TrimPrefix(p, "linux/")}, mustMeta(t))
		if err != nil {
			t.Fatal(err)
		}
		if d1, d2 := digest(t, img), digest(t, again); d1 != d2 {
			t.Errorf("%s: assembled again from the same files, the image is %s, not %s", p, d2, d1)
		}
	}
	local, err := tarball.ImageFromPath(tarPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host := imgs["linux/"+runtime.GOARCH]; host != nil && configName(t, local) != configName(t, host) {
		t.Errorf("the tarball's image config is %s, not the index's linux/%s's %s", configName(t, local), runtime.GOARCH, configName(t, host))
	}
	if st, err := os.Stat(tarPath); err == nil {
		t.Logf("image tarball %.1f MB", float64(st.Size())/(1<<20))
	}
}

// `make push` pushes the index, with the remote package, to a registry (here
// go-containerregistry's, in memory, on loopback): read back, it is the same
// index, with both platforms, the labels and the commit's created time.
func TestPush(t *testing.T) {
	t.Parallel()
	layoutDir, _ := builtImage(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/team/dynwatch:v-test"
	// As make push runs it: a registry on loopback is spoken to over HTTP.
	if err := pushMain([]string{"--from", layoutDir, ref}); err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(r)
	if err != nil {
		t.Fatal(err)
	}
	checkIndex(t, idx)
	local, err := layoutIndex(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := digest(t, idx), digest(t, local); got != want {
		t.Errorf("the registry holds index %s, the layout %s", got, want)
	}
	if err := pushMain([]string{"--from", layoutDir}); err == nil {
		t.Error("push without a reference: no error")
	}
}

func mustMeta(t *testing.T) metadata {
	t.Helper()
	m, err := options{root: "../..", version: "test-image", source: "https://example.invalid/dynwatch"}.metadata(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func digest(t *testing.T, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func configName(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	h, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

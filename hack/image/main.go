// Command image builds dynwatch's container image without a container engine
// or a base image: a static binary (CGO_ENABLED=0), the CA bundle and a
// non-root user, in one layer, written as an image tarball that `docker load`
// and `podman load` read. `make image` runs it; the Dockerfile builds the same
// image with the tools a user has.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// UID is the non-root user the image runs as (distroless' nonroot).
const UID = 65532

func main() {
	out := flag.String("o", "bin/dynwatch-image.tar", "the image tarball to write")
	tag := flag.String("t", "dynwatch:latest", "the image's name")
	ldflags := flag.String("ldflags", "", "go build -ldflags")
	caFile := flag.String("ca", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to ship")
	flag.Parse()
	if err := build(*out, *tag, *ldflags, *caFile); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Println("image: wrote", *out, "as", *tag)
}

// build compiles dynwatch statically and writes the image tarball.
func build(out, tag, ldflags, caFile string) error {
	dir, err := os.MkdirTemp("", "dynwatch-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "dynwatch")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", bin, "./cmd/dynwatch")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	img, err := Image(bin, caFile)
	if err != nil {
		return err
	}
	ref, err := name.ParseReference(tag)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return tarball.WriteToFile(out, ref, img)
}

// Image assembles the image from scratch: /dynwatch, the CA bundle, and a
// passwd and group naming the non-root user it runs as.
func Image(bin, caFile string) (v1.Image, error) {
	files := map[string]struct {
		path string
		data []byte
		mode int64
	}{}
	for _, f := range []struct {
		dst, src string
		mode     int64
	}{{"dynwatch", bin, 0o755}, {"etc/ssl/certs/ca-certificates.crt", caFile, 0o644}} {
		b, err := os.ReadFile(f.src)
		if err != nil {
			return nil, err
		}
		files[f.dst] = struct {
			path string
			data []byte
			mode int64
		}{f.dst, b, f.mode}
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
	write := func(name string, data []byte, mode int64) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data)), ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, f := range []string{"dynwatch", "etc/ssl/certs/ca-certificates.crt"} {
		if err := write(f, files[f].data, files[f].mode); err != nil {
			return nil, err
		}
	}
	if err := write("etc/passwd", []byte(passwd), 0o644); err != nil {
		return nil, err
	}
	if err := write("etc/group", []byte(group), 0o644); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Config.User = fmt.Sprintf("%d:%d", UID, UID)
	cf.Config.Entrypoint = []string{"/dynwatch"}
	cf.Config.Cmd = []string{"run", "--config", "/etc/dynwatch/config.yaml"}
	cf.Config.Env = []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	cf.Config.Labels = map[string]string{"org.opencontainers.image.title": "dynwatch"}
	return mutate.ConfigFile(img, cf)
}

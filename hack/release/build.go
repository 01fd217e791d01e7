package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// platforms are the binaries a release has, os/arch; the image has the linux ones.
var platforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}

// options say what build makes and where.
type options struct {
	version         string // vX.Y.Z
	dist            string // the directory written (emptied first)
	root            string // the checkout
	commit          string // what the binaries report; empty: git's short HEAD
	imageRepository string // values.yaml's image.repository in the packaged chart, if set
	allowDirty      bool   // release a checkout with changes, its commit ending in -dirty
}

// releaseCommit is the commit the release is built from, in full and short:
// HEAD, if the checkout has no change git sees (tracked or not ignored).
// Otherwise it is refused, or, allowed, both end in -dirty: the binaries, the
// image and the SBOM never name a commit that is not what they were built from.
func releaseCommit(ctx context.Context, root string, allowDirty bool) (rev, short string, err error) {
	if rev, err = git(ctx, root, "rev-parse", "HEAD"); err != nil {
		return "", "", err
	}
	if short, err = git(ctx, root, "rev-parse", "--short", "HEAD"); err != nil {
		return "", "", err
	}
	changes, err := git(ctx, root, "status", "--porcelain")
	if err != nil || changes == "" {
		return rev, short, err
	}
	if !allowDirty {
		return "", "", fmt.Errorf("the checkout has changes not committed (git status lists them): commit or stash them, or release it as it is with ALLOW_DIRTY=1 (-allow-dirty), its commit then %s-dirty", short)
	}
	return rev + "-dirty", short + "-dirty", nil
}

// build writes the release into o.dist and returns the files it wrote.
func build(ctx context.Context, o options) ([]string, error) {
	rev, short, err := releaseCommit(ctx, o.root, o.allowDirty)
	if err != nil {
		return nil, err
	}
	if o.commit == "" {
		o.commit = short
	}
	epoch, err := git(ctx, o.root, "log", "-1", "--format=%ct")
	if err != nil {
		return nil, err
	}
	sec, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("commit time %q: %w", epoch, err)
	}
	created := time.Unix(sec, 0).UTC()
	if err := os.RemoveAll(o.dist); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.dist, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, p := range platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		bin, err := compile(ctx, o, goos, goarch)
		if err != nil {
			return nil, err
		}
		arc := fmt.Sprintf("kubectl-dynwatch_%s_%s_%s.tar.gz", o.version, goos, goarch)
		if err := pluginArchive(filepath.Join(o.dist, arc), filepath.Join(o.dist, bin), filepath.Join(o.root, "LICENSE"), created); err != nil {
			return nil, err
		}
		files = append(files, bin, arc)
	}
	sbom := "dynwatch_" + o.version + ".spdx.json"
	if err := writeSBOM(o, rev, filepath.Join(o.dist, sbom), created); err != nil {
		return nil, err
	}
	chart, err := packageChart(filepath.Join(o.root, "charts", "dynwatch"), o.dist, o.version, o.imageRepository, created)
	if err != nil {
		return nil, err
	}
	files = append(files, sbom, chart)
	if err := writeChecksums(o.dist, files); err != nil {
		return nil, err
	}
	if err := buildImage(ctx, o, rev, epoch); err != nil {
		return nil, err
	}
	return append(files, checksumsFile, imageLayout), nil
}

// compile builds dynwatch for goos/goarch as dist/dynwatch_<os>_<arch>:
// static, -trimpath, stripped, with the version and commit.
func compile(ctx context.Context, o options, goos, goarch string) (string, error) {
	name := "dynwatch_" + goos + "_" + goarch
	out, err := filepath.Abs(filepath.Join(o.dist, name))
	if err != nil {
		return "", err
	}
	ldflags := fmt.Sprintf("-s -w -X main.version=%s -X main.commit=%s", o.version, o.commit)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, "./cmd/dynwatch")
	cmd.Dir = o.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build for %s/%s: %w", goos, goarch, err)
	}
	return name, nil
}

// imageLayout is the OCI image layout directory, under dist, of the image index.
const imageLayout = "dynwatch-image"

// buildImage runs hack/image on the linux binaries just built: the index
// holds the very binaries the release ships.
func buildImage(ctx context.Context, o options, rev, epoch string) error {
	dist, err := filepath.Abs(o.dist)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "run", "./hack/image", "-o", filepath.Join(dist, imageLayout), "-tar", "",
		"-bins", dist, "-version", o.version, "-revision", rev, "-created", epoch)
	cmd.Dir = o.root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/image: %w", err)
	}
	return nil
}

// pluginArchive writes the kubectl plugin's archive for krew: the binary as
// kubectl-dynwatch and the LICENSE, dated at the commit.
func pluginArchive(dst, bin, license string, mtime time.Time) error {
	return writeTarGz(dst, mtime, []tarFile{{name: "kubectl-dynwatch", src: bin, mode: 0o755}, {name: "LICENSE", src: license, mode: 0o644}})
}

// tarFile is one file of an archive: its name there, read from src (or data when src is empty).
type tarFile struct {
	name string
	src  string
	data []byte
	mode int64
}

// writeTarGz writes files, in order, as a gzipped tar whose every entry has mtime.
func writeTarGz(dst string, mtime time.Time, files []tarFile) (err error) {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for _, tf := range files {
		data := tf.data
		if tf.src != "" {
			if data, err = os.ReadFile(tf.src); err != nil {
				return err
			}
		}
		h := &tar.Header{Name: tf.name, Mode: tf.mode, Size: int64(len(data)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// checksumsFile holds the SHA-256 of every other file of the release, in sha256sum's format.
const checksumsFile = "checksums.txt"

func writeChecksums(dist string, files []string) error {
	sort.Strings(files)
	var b strings.Builder
	for _, name := range files {
		f, err := os.Open(filepath.Join(dist, name))
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		_ = f.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), name)
	}
	return os.WriteFile(filepath.Join(dist, checksumsFile), []byte(b.String()), 0o644)
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// options say what build builds and where it writes it.
type options struct {
	root      string   // the module's directory (empty: the working directory)
	layout    string   // the OCI image layout directory (rewritten)
	tarball   string   // the build machine's platform as a tarball; empty: none
	tag       string   // the tarball image's name
	ldflags   string   // besides -s -w
	caFile    string   // the CA bundle to ship
	version   string   // labels: org.opencontainers.image.version,
	revision  string   // .revision (empty: git rev-parse HEAD),
	source    string   // .source
	epoch     string   // the created time, seconds (empty: the commit's)
	platforms []string // os/arch
	bins      string   // prebuilt binaries, dynwatch_<os>_<arch> (make release's); empty: compile
}

// build compiles dynwatch statically for each platform, assembles one image
// per platform and writes their index.
func build(ctx context.Context, o options) (v1.ImageIndex, error) {
	meta, err := o.metadata(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "dynwatch-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var local v1.Image
	for _, p := range o.platforms {
		plat, err := v1.ParsePlatform(p)
		if err != nil {
			return nil, err
		}
		bin := filepath.Join(o.bins, "dynwatch_"+plat.OS+"_"+plat.Architecture)
		if o.bins == "" {
			bin = filepath.Join(dir, plat.OS+"-"+plat.Architecture, "dynwatch")
			if err := compile(ctx, o.root, bin, *plat, o.ldflags); err != nil {
				return nil, err
			}
		}
		img, err := Image(bin, o.caFile, *plat, meta)
		if err != nil {
			return nil, err
		}
		if plat.Architecture == runtime.GOARCH || local == nil {
			local = img
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
	}
	if err := writeLayout(o.layout, idx); err != nil {
		return nil, err
	}
	if o.tarball != "" && local != nil {
		ref, err := name.ParseReference(o.tag)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(o.tarball), 0o755); err != nil {
			return nil, err
		}
		if err := tarball.WriteToFile(o.tarball, ref, local); err != nil {
			return nil, err
		}
	}
	return idx, nil
}

// compile builds a static, stripped dynwatch for plat: -trimpath and -s -w,
// and nothing that depends on when it was built.
func compile(ctx context.Context, root, bin string, plat v1.Platform, ldflags string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", strings.TrimSpace("-s -w "+ldflags), "-o", bin, "./cmd/dynwatch")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+plat.OS, "GOARCH="+plat.Architecture)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s/%s: %w", plat.OS, plat.Architecture, err)
	}
	return nil
}

// writeLayout replaces dir with an OCI image layout holding idx.
func writeLayout(dir string, idx v1.ImageIndex) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("write %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx); err != nil {
		return fmt.Errorf("write %s: %w", dir, err)
	}
	return nil
}

// metadata is what the image says about itself: its labels and created time.
type metadata struct {
	created time.Time
	labels  map[string]string
}

// metadata fills in the revision and the created time from git where the
// options leave them empty.
func (o options) metadata(ctx context.Context) (metadata, error) {
	rev, epoch := o.revision, o.epoch
	var err error
	if rev == "" {
		if rev, err = git(ctx, o.root, "rev-parse", "HEAD"); err != nil {
			return metadata{}, err
		}
	}
	if epoch == "" {
		if epoch, err = git(ctx, o.root, "log", "-1", "--format=%ct"); err != nil {
			return metadata{}, err
		}
	}
	sec, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return metadata{}, fmt.Errorf("created time %q: %w", epoch, err)
	}
	return metadata{created: time.Unix(sec, 0).UTC(), labels: map[string]string{
		"org.opencontainers.image.title":    "dynwatch",
		"org.opencontainers.image.source":   o.source,
		"org.opencontainers.image.version":  o.version,
		"org.opencontainers.image.revision": rev,
		"org.opencontainers.image.created":  time.Unix(sec, 0).UTC().Format(time.RFC3339),
	}}, nil
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

// Command release makes a dynwatch release from the checkout, as `make
// release VERSION=v0.x.y` runs it: into dist/, the binaries for linux and
// darwin on amd64 and arm64 (static, -trimpath, stripped, the version and
// commit in them), the kubectl plugin's archives the krew manifest names, an
// SPDX SBOM read from the binaries' build info, the image index (an OCI image
// layout, hack/image's, from those binaries), the Helm chart packaged with
// version and appVersion set, and a sha256sum checksums file. It pushes
// nothing. `release publish` (make publish VERSION=… REGISTRY=…) pushes what
// it wrote: the image index as REGISTRY/dynwatch:VERSION and the chart as an
// OCI artifact, REGISTRY/charts/dynwatch:CHARTVERSION, as `helm push` stores
// one (`helm install dynwatch oci://REGISTRY/charts/dynwatch --version …`).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// semver is a release version as the image tag, `dynwatch version` and the
// chart's appVersion say it; the chart's version is the same without the v.
// A pre-release's identifiers are as semver has them (none empty, a numeric
// one without a leading zero), else Go takes no module at that tag and Helm
// no chart at that version.
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-` + preID + `(\.` + preID + `)*)?$`)

// preID is one identifier of a pre-release: a number, or letters, digits and -.
const preID = `(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)`

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "publish" {
		err = publishMain(context.Background(), os.Args[2:])
	} else {
		err = buildMain(context.Background(), os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// checkVersion refuses what is no release version, saying what to give.
func checkVersion(v string) error {
	if !semver.MatchString(v) {
		return fmt.Errorf("version %q is not a release version: give VERSION=vMAJOR.MINOR.PATCH (e.g. make release VERSION=v0.2.0)", v)
	}
	return nil
}

// chartVersion is v without its v, as Helm's semver wants the chart's version.
func chartVersion(v string) string { return strings.TrimPrefix(v, "v") }

func buildMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.version, "version", "", "the release's version, vMAJOR.MINOR.PATCH (required)")
	fs.StringVar(&o.dist, "o", "dist", "the directory to write the release into (emptied first)")
	fs.StringVar(&o.root, "root", ".", "the checkout to build")
	fs.StringVar(&o.commit, "commit", "", "the commit the binaries report (default: git rev-parse --short HEAD)")
	fs.BoolVar(&o.allowDirty, "allow-dirty", false, "release a checkout with changes not committed, its commit then ending in -dirty (default: refuse it)")
	fs.StringVar(&o.imageRepository, "image-repository", "", "the chart's default image.repository, where make publish pushes the image (default: the chart's own, dynwatch)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkVersion(o.version); err != nil {
		return err
	}
	files, err := build(ctx, o)
	if err != nil {
		return err
	}
	for _, f := range files {
		fmt.Println("release: wrote", f)
	}
	return nil
}

func publishMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("release publish", flag.ContinueOnError)
	var o publishOptions
	fs.StringVar(&o.version, "version", "", "the release's version, as make release was given it (required)")
	fs.StringVar(&o.dist, "from", "dist", "the directory make release wrote")
	fs.StringVar(&o.root, "root", ".", "the checkout (hack/image pushes the image)")
	fs.BoolVar(&o.insecure, "insecure", false, "talk plain HTTP to the registry")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: release publish --version vX.Y.Z [--from DIR] [--insecure] REGISTRY (e.g. registry.example.com/dynwatch)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("publish: want one registry (host/path), got %d: make publish VERSION=vX.Y.Z REGISTRY=host/path", fs.NArg())
	}
	o.registry = strings.TrimSuffix(strings.TrimPrefix(fs.Arg(0), "oci://"), "/")
	if err := checkVersion(o.version); err != nil {
		return err
	}
	refs, err := publish(ctx, o)
	if err != nil {
		return err
	}
	for _, r := range refs {
		fmt.Println("release: pushed", r)
	}
	return nil
}

// Command image builds dynwatch's container image without a container engine
// or a base image: a static, stripped binary (CGO_ENABLED=0, -trimpath,
// -s -w), the CA bundle and a non-root user, in one layer, for linux/amd64 and
// linux/arm64, as one image index in an OCI image layout directory; and, for
// `docker load`, the build machine's platform as an image tarball. The image's
// created time is the commit's, so that two builds of one commit are the same
// image. `make image` runs it; `make push IMAGE=…` runs `image push`, which
// pushes the index to a registry. The Dockerfile builds the same image with the
// tools a user has.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
)

// UID is the non-root user the image runs as (distroless' nonroot).
const UID = 65532

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "push" {
		err = pushMain(os.Args[2:])
	} else {
		err = buildMain(os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func buildMain(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.layout, "o", "bin/dynwatch-image", "the OCI image layout directory to write the index to")
	fs.StringVar(&o.tarball, "tar", "bin/dynwatch-image.tar", "the image tarball (docker load) of the build machine's platform to write; empty: none")
	fs.StringVar(&o.tag, "t", "dynwatch:latest", "the name the tarball's image has")
	fs.StringVar(&o.ldflags, "ldflags", "", "go build -ldflags, besides -s -w")
	fs.StringVar(&o.caFile, "ca", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to ship")
	fs.StringVar(&o.version, "version", "dev", "the org.opencontainers.image.version label")
	fs.StringVar(&o.revision, "revision", "", "the org.opencontainers.image.revision label (default: the commit, from git)")
	fs.StringVar(&o.source, "source", "https://github.com/dynwatch/dynwatch", "the org.opencontainers.image.source label")
	fs.StringVar(&o.epoch, "created", os.Getenv("SOURCE_DATE_EPOCH"), "the image's created time, in seconds since 1970 (default: $SOURCE_DATE_EPOCH, then the commit's time, from git)")
	fs.StringVar(&o.bins, "bins", "", "take the binaries from this directory (dynwatch_<os>_<arch>, as make release writes them) instead of compiling them; -ldflags is then unused")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "the platforms the index holds")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.platforms = strings.Split(*platforms, ",")
	idx, err := build(context.Background(), o)
	if err != nil {
		return err
	}
	d, _ := idx.Digest()
	fmt.Printf("image: wrote %s (%s, index %s)\n", o.layout, *platforms, d)
	if o.tarball != "" {
		fmt.Println("image: wrote", o.tarball, "as", o.tag)
	}
	return nil
}

func pushMain(args []string) error {
	fs := flag.NewFlagSet("image push", flag.ContinueOnError)
	layout := fs.String("from", "bin/dynwatch-image", "the OCI image layout directory that make image wrote")
	insecure := fs.Bool("insecure", false, "talk plain HTTP to the registry")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: image push [--from DIR] [--insecure] REGISTRY/NAME:TAG")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("push: want one image reference, got %d", fs.NArg())
	}
	d, err := push(context.Background(), *layout, fs.Arg(0), *insecure)
	if err != nil {
		return err
	}
	fmt.Printf("image: pushed %s as %s@%s\n", *layout, fs.Arg(0), d)
	return nil
}

package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at build time: -ldflags "-X main.version=… -X main.commit=…" (make build,
// make release, the image). A build without them reports what the Go
// toolchain recorded instead: see built.
var (
	version = "dev"
	commit  = "unknown"
)

// buildInfo is the version and commit this binary reports, in `version`,
// --version and the dynwatch_build_info metric.
type buildInfo struct {
	Version, Commit string
}

// built is the version and commit set by -ldflags, else, as Go recorded them
// in the binary, the main module's version (`go install
// github.com/dynwatch/dynwatch/cmd/dynwatch@v0.2.0` builds v0.2.0; a build in a
// checkout gets a version from its tag and commit) and the VCS revision.
func built() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return resolveBuild(version, commit, bi)
}

// resolveBuild is built's choice: -ldflags' values win, then bi's.
func resolveBuild(ldVersion, ldCommit string, bi *debug.BuildInfo) buildInfo {
	b := buildInfo{Version: ldVersion, Commit: ldCommit}
	if bi == nil {
		return b
	}
	if b.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	if b.Commit == "unknown" {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				b.Commit = s.Value[:min(12, len(s.Value))]
			}
		}
	}
	return b
}

func cmdVersion(_ context.Context, e *env, args []string) int {
	fs := flagSet(e, "version", "", "Prints dynwatch's version and commit, and the Go and client-go versions it was built with.")
	var kf kubeFlags
	kf.registerOffline(fs)
	lf := commandLogs(fs)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if code, ok := lf.apply(fs, e, &kf); !ok {
		return code
	}
	clientGo := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/client-go" {
				clientGo = d.Version
			}
		}
	}
	b := built()
	fmt.Fprintf(e.stdout, "dynwatch %s\ncommit: %s\ngo: %s\nclient-go: %s\n", b.Version, b.Commit, runtime.Version(), clientGo)
	return exitOK
}

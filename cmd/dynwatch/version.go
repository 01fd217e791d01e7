package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at build time: -ldflags "-X main.version=… -X main.commit=…".
var (
	version = "dev"
	commit  = "unknown"
)

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
	fmt.Fprintf(e.stdout, "dynwatch %s\ncommit: %s\ngo: %s\nclient-go: %s\n", version, commit, runtime.Version(), clientGo)
	return exitOK
}

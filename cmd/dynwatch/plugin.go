package main

import (
	"path/filepath"
	"strings"
)

// progName is how dynwatch names itself in help and usage: "dynwatch", or,
// installed as the kubectl plugin kubectl-dynwatch, "kubectl dynwatch".
var progName = "dynwatch"

// nameFor is the name a binary invoked as argv0 goes by: kubectl runs the
// plugin kubectl-dynwatch (found on $PATH) for `kubectl dynwatch …`.
func nameFor(argv0 string) string {
	base := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	if base == "kubectl-dynwatch" {
		return "kubectl dynwatch"
	}
	return "dynwatch"
}

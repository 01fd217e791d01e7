package main

import (
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// A go.sum hash (h1:) hashes the module's file list, not its zip: the SBOM
// must not call it the package's SHA256 (a consumer checking the module's
// zip against it would find a mismatch), and still says it, as it is.
func TestSBOMSaysTheGoSumHashAsWhatItIs(t *testing.T) {
	const h1 = "h1:qJmnOUb4YB+FsEuM3HcWucdZASCPGhsX6uljO6pog0c="
	doc := sbom("v1.2.3", "0123456789abcdef0123456789abcdef01234567", modulePath, []*debug.Module{{Path: "golang.org/x/mod", Version: "v0.41.0", Sum: h1}}, time.Unix(0, 0))
	if len(doc.Packages) != 2 {
		t.Fatalf("%d packages, want the main module and one dependency", len(doc.Packages))
	}
	dep := doc.Packages[1]
	if len(dep.Checksums) != 0 {
		t.Errorf("the dependency claims checksums %v: an h1: hash is no SPDX checksum of the package", dep.Checksums)
	}
	if !strings.Contains(dep.Comment, h1) {
		t.Errorf("the dependency's comment %q does not give its go.sum hash %s", dep.Comment, h1)
	}
}

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

// An SPDX document's namespace names that one document: two releases at
// one version from different commits (a tag moved, a checkout released
// -dirty) are two documents; the same commit's is the same, byte for byte.
func TestSBOMNamespaceIsTheDocuments(t *testing.T) {
	const a, b = "0123456789abcdef0123456789abcdef01234567", "89abcdef0123456789abcdef0123456789abcdef"
	ns := func(rev string) string {
		return sbom("v1.2.3", rev, modulePath, nil, time.Unix(0, 0)).DocumentNamespace
	}
	if ns(a) == ns(b) {
		t.Errorf("commits %s and %s: one namespace %s", a, b, ns(a))
	}
	if ns(a) != ns(a) || !strings.HasPrefix(ns(a), "https://") {
		t.Errorf("namespace %q, want one https URI per commit", ns(a))
	}
}

package main

import (
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"time"
)

// The SBOM is an SPDX 2.3 JSON document read from what the Go toolchain
// recorded in the binaries (debug/buildinfo): the main module at the
// release's version and every module linked into any of them, with its
// version and its go.sum hash.
type spdxDoc struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreation       `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreation struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	Name             string         `json:"name"`
	SPDXID           string         `json:"SPDXID"`
	VersionInfo      string         `json:"versionInfo"`
	DownloadLocation string         `json:"downloadLocation"`
	FilesAnalyzed    bool           `json:"filesAnalyzed"`
	LicenseConcluded string         `json:"licenseConcluded,omitempty"`
	Checksums        []spdxChecksum `json:"checksums,omitempty"`
	ExternalRefs     []spdxRef      `json:"externalRefs"`
	Comment          string         `json:"comment,omitempty"`
}

type spdxChecksum struct {
	Algorithm string `json:"algorithm"`
	Value     string `json:"checksumValue"`
}

type spdxRef struct {
	Category string `json:"referenceCategory"`
	Type     string `json:"referenceType"`
	Locator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// writeSBOM writes the SPDX document of the release's binaries, built
// from commit rev, to dst.
func writeSBOM(o options, rev, dst string, created time.Time) error {
	mainPath := ""
	var deps []*debug.Module
	for _, p := range platforms {
		bi, err := buildinfo.ReadFile(filepath.Join(o.dist, "dynwatch_"+strings.ReplaceAll(p, "/", "_")))
		if err != nil {
			return fmt.Errorf("sbom: %w", err)
		}
		mainPath = bi.Main.Path
		deps = append(deps, bi.Deps...)
	}
	b, err := json.MarshalIndent(sbom(o.version, rev, mainPath, deps, created), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(dst, append(b, '\n'), 0o644)
}

// sbom is the SPDX document of the main module at version, built from
// commit rev, and deps (each
// once, replaced by its replacement).
func sbom(version, rev, mainPath string, mods []*debug.Module, created time.Time) spdxDoc {
	deps := map[string]*debug.Module{}
	for _, d := range mods {
		if d.Replace != nil {
			d = d.Replace
		}
		deps[d.Path+"@"+d.Version] = d
	}
	doc := spdxDoc{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
		Name:              "dynwatch-" + version,
		DocumentNamespace: "https://github.com/dynwatch/dynwatch/releases/" + version + "/sbom/" + rev,
		CreationInfo:      spdxCreation{Created: created.Format(time.RFC3339), Creators: []string{"Organization: dynwatch", "Tool: hack/release"}},
	}
	root := spdxPackage{
		Name: mainPath, SPDXID: "SPDXRef-Package-" + spdxID(mainPath), VersionInfo: version,
		DownloadLocation: "https://github.com/dynwatch/dynwatch", LicenseConcluded: "Apache-2.0",
		ExternalRefs: []spdxRef{purl(mainPath, version)},
	}
	doc.Packages = append(doc.Packages, root)
	doc.Relationships = append(doc.Relationships, spdxRelationship{"SPDXRef-DOCUMENT", "DESCRIBES", root.SPDXID})
	keys := make([]string, 0, len(deps))
	for k := range deps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d := deps[k]
		p := spdxPackage{
			Name: d.Path, SPDXID: "SPDXRef-Package-" + spdxID(k), VersionInfo: d.Version,
			DownloadLocation: "NOASSERTION", ExternalRefs: []spdxRef{purl(d.Path, d.Version)},
		}
		// A go.sum hash (h1:) is the SHA-256 of a list of the module's
		// files and their SHA-256s, not of the module's zip: it is no
		// SPDX checksum of the package, so it is said as what it is.
		if d.Sum != "" {
			p.Comment = "go.sum hash: " + d.Sum
		}
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, spdxRelationship{root.SPDXID, "DEPENDS_ON", p.SPDXID})
	}
	return doc
}

var notID = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// spdxID makes s an SPDX identifier's tail (letters, digits, . and -).
func spdxID(s string) string { return notID.ReplaceAllString(s, "-") }

func purl(path, version string) spdxRef {
	return spdxRef{"PACKAGE-MANAGER", "purl", "pkg:golang/" + path + "@" + version}
}

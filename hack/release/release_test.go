package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"
)

const testVersion = "v0.9.1"

// `make release VERSION=…` then `make publish VERSION=… REGISTRY=…`, into a
// registry on loopback (go-containerregistry's, in memory), as make runs
// them: the four binaries and their checksums, the SBOM, the plugin
// archives, the chart at the version, and in the registry the image index
// of two platforms at the version's tag and the chart as Helm stores one.
func TestReleaseAndPublish(t *testing.T) {
	skipUnlessReleaseTests(t)
	dist := t.TempDir()
	// -allow-dirty: the test runs on a checkout being worked on too.
	if err := buildMain(t.Context(), []string{"-version", testVersion, "-o", dist, "-root", "../..", "-allow-dirty"}); err != nil {
		t.Fatal(err)
	}
	sums := checkChecksums(t, dist)
	for _, p := range platforms {
		bin := "dynwatch_" + strings.ReplaceAll(p, "/", "_")
		arc := "kubectl-dynwatch_" + testVersion + "_" + strings.ReplaceAll(p, "/", "_") + ".tar.gz"
		if sums[bin] == "" || sums[arc] == "" {
			t.Errorf("%s: the checksums file lacks %s or %s", p, bin, arc)
		}
		if files := tarFiles(t, filepath.Join(dist, arc)); files["kubectl-dynwatch"] == nil || !bytes.HasPrefix(files["LICENSE"], []byte("\n                                 Apache License")) {
			t.Errorf("%s holds %d files, want kubectl-dynwatch and the Apache LICENSE", arc, len(files))
		}
	}
	if runtime.GOOS+"/"+runtime.GOARCH == "linux/amd64" {
		_, commit, _ := releaseCommit(t.Context(), "../..", true)
		out, err := exec.Command(filepath.Join(dist, "dynwatch_linux_amd64"), "version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "dynwatch "+testVersion+"\ncommit: "+commit+"\n") {
			t.Errorf("dynwatch version of the release binary: %v\n%s\nwant dynwatch %s, commit %s", err, out, testVersion, commit)
		}
	}
	checkSBOM(t, filepath.Join(dist, "dynwatch_"+testVersion+".spdx.json"))
	chart := "dynwatch-" + strings.TrimPrefix(testVersion, "v") + ".tgz"
	if sums[chart] == "" {
		t.Errorf("the checksums file lacks %s", chart)
	}
	checkChartYAML(t, "the packaged chart", tarFiles(t, filepath.Join(dist, chart))["dynwatch/Chart.yaml"])

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	reg := strings.TrimPrefix(srv.URL, "http://") + "/team"
	if err := publishMain(t.Context(), []string{"-version", testVersion, "-from", dist, "-root", "../..", "oci://" + reg}); err != nil {
		t.Fatal(err)
	}
	checkPublished(t, reg)
}

// checkChecksums checks each line of the checksums file against its file
// and returns the sums by name.
func checkChecksums(t *testing.T, dist string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dist, checksumsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	line := regexp.MustCompile(`^([0-9a-f]{64})  (\S+)$`)
	for sc := bufio.NewScanner(f); sc.Scan(); {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Fatalf("checksums: %q is not sha256sum's format", sc.Text())
		}
		data, err := os.ReadFile(filepath.Join(dist, m[2]))
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != m[1] {
			t.Errorf("checksums: %s is %x, the file says %s", m[2], got, m[1])
		}
		sums[m[2]] = m[1]
	}
	return sums
}

// checkSBOM: the main module at the version, and every module go.mod
// requires that the binary links (client-go at least) with its version and
// go.sum hash.
func checkSBOM(t *testing.T, file string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc spdxDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || len(doc.Packages) == 0 || doc.Packages[0].Name != "github.com/dynwatch/dynwatch" || doc.Packages[0].VersionInfo != testVersion {
		t.Fatalf("SBOM: %s, first package %+v; want the main module at %s", doc.SPDXVersion, doc.Packages[:min(1, len(doc.Packages))], testVersion)
	}
	got := map[string]spdxPackage{}
	for _, p := range doc.Packages[1:] {
		got[p.Name] = p
		if p.VersionInfo == "" || !regexp.MustCompile(`go.sum hash: h1:[A-Za-z0-9+/]{43}=`).MatchString(p.Comment) {
			t.Errorf("SBOM: %s has version %q and comment %q, want its go.sum hash", p.Name, p.VersionInfo, p.Comment)
		}
	}
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"k8s.io/client-go", "github.com/prometheus/client_golang", "go.etcd.io/bbolt"} {
		v := regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(want) + `\s+(\S+)`).FindSubmatch(mod)
		if v == nil || got[want].VersionInfo != string(v[1]) {
			t.Errorf("SBOM: %s at %q, go.mod requires %q", want, got[want].VersionInfo, v)
		}
	}
	if len(doc.Relationships) != len(doc.Packages) {
		t.Errorf("SBOM: %d relationships for %d packages", len(doc.Relationships), len(doc.Packages))
	}
}

// checkChartYAML: the chart's version is the release's without the v, its
// appVersion the release's (the image tag the chart defaults to).
func checkChartYAML(t *testing.T, what string, chartYAML []byte) {
	t.Helper()
	var c struct{ Name, Version, AppVersion string }
	if err := yaml.Unmarshal(chartYAML, &c); err != nil || c.Name != "dynwatch" || c.Version != strings.TrimPrefix(testVersion, "v") || c.AppVersion != testVersion {
		t.Errorf("%s: %+v (%v), want version %s and appVersion %s", what, c, err, strings.TrimPrefix(testVersion, "v"), testVersion)
	}
}

// checkPublished reads back what publish pushed to reg.
func checkPublished(t *testing.T, reg string) {
	t.Helper()
	ref, err := name.ParseReference(reg + "/dynwatch:" + testVersion)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var plats []string
	for _, d := range im.Manifests {
		if d.Platform != nil {
			plats = append(plats, d.Platform.OS+"/"+d.Platform.Architecture)
		}
	}
	if strings.Join(plats, ",") != "linux/amd64,linux/arm64" {
		t.Errorf("%s is an index of %v, want linux/amd64 and linux/arm64", ref, plats)
	}
	cref, err := name.ParseReference(reg + "/charts/dynwatch:" + strings.TrimPrefix(testVersion, "v"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(cref)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != helmConfigType || len(m.Layers) != 1 || m.Layers[0].MediaType != helmChartType {
		t.Fatalf("%s: config %s, layers %v; want Helm's media types", cref, m.Config.MediaType, m.Layers)
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	checkChartYAML(t, "the chart's config in the registry", cfg) // JSON is YAML
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	checkChartYAML(t, "the chart in the registry", readTarGz(t, data)["dynwatch/Chart.yaml"])
}

func tarFiles(t *testing.T, file string) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return readTarGz(t, data)
}

func readTarGz(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		} else if err != nil {
			t.Fatal(err)
		}
		if files[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
}

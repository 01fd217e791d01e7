package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// One version everywhere in the checkout: the chart's appVersion is a release
// version (what `dynwatch version` and the image tag say), the chart's image
// tag defaults to it, and the kustomize variants run the image of that tag.
func TestOneVersion(t *testing.T) {
	var chart struct{ Version, AppVersion string }
	readYAML(t, "../../charts/dynwatch/Chart.yaml", &chart)
	if err := checkVersion(chart.AppVersion); err != nil || chartVersion(chart.AppVersion) != chart.Version {
		t.Errorf("Chart.yaml: version %q, appVersion %q; want appVersion vX.Y.Z, the image tag, and version the same without the v (%v)", chart.Version, chart.AppVersion, err)
	}
	var values struct {
		Image struct{ Repository, Tag string }
	}
	readYAML(t, "../../charts/dynwatch/values.yaml", &values)
	tpl, err := os.ReadFile("../../charts/dynwatch/templates/_helpers.tpl")
	if err != nil {
		t.Fatal(err)
	}
	if values.Image.Tag != "" || !strings.Contains(string(tpl), `(.Values.image.tag | default .Chart.AppVersion | toString)`) {
		t.Errorf("values.yaml's image.tag is %q: want it empty, the template defaulting it to the appVersion", values.Image.Tag)
	}
	for _, variant := range []string{"deployment", "statefulset"} {
		m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "../../deploy/"+variant)
		if err != nil {
			t.Fatalf("kustomize %s: %v", variant, err)
		}
		var images []string
		for _, r := range m.Resources() {
			if r.GetKind() != "Deployment" && r.GetKind() != "StatefulSet" {
				continue
			}
			var w struct {
				Spec struct {
					Template struct {
						Spec struct{ Containers []struct{ Image string } }
					}
				}
			}
			y, err := r.AsYAML()
			if err == nil {
				err = yaml.Unmarshal(y, &w)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range w.Spec.Template.Spec.Containers {
				images = append(images, c.Image)
			}
		}
		if want := values.Image.Repository + ":" + chart.AppVersion; len(images) != 1 || images[0] != want {
			t.Errorf("deploy/%s runs %v, want %s (the chart's image)", variant, images, want)
		}
	}
}

func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// The release tests build dynwatch from nothing (a module cache of their own,
// four cross-builds with -trimpath): minutes on a cold build cache, which
// would double make test's time. make release-test runs them, and CI runs
// make release-test after make test.
func skipUnlessReleaseTests(t *testing.T) {
	t.Helper()
	if os.Getenv("DYNWATCH_RELEASE_TESTS") == "" {
		t.Skip("a release test: make release-test runs it (DYNWATCH_RELEASE_TESTS=1); CI runs it after make test")
	}
}

// make publish's chart installs the image it pushed: the release given a
// repository packages the chart with that image.repository (and nothing else
// of values.yaml changed); without one, values.yaml is the checkout's.
func TestPackagedChartNamesThePublishedImage(t *testing.T) {
	chart := filepath.Join("..", "..", "charts", "dynwatch")
	orig, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, repo := range []string{"", "registry.example.com/team/dynwatch"} {
		dist := t.TempDir()
		out, err := packageChart(chart, dist, "v1.2.3", repo, time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		got := tarFiles(t, filepath.Join(dist, out))["dynwatch/values.yaml"]
		var v struct {
			Image struct{ Repository string } `json:"image"`
		}
		if err := yaml.Unmarshal(got, &v); err != nil {
			t.Fatal(err)
		}
		want := repo
		if repo == "" {
			want = "dynwatch"
			if !bytes.Equal(got, orig) {
				t.Errorf("without a repository, the packaged values.yaml differs from the checkout's")
			}
		}
		if v.Image.Repository != want {
			t.Errorf("repository %q: the packaged chart's image.repository is %q", repo, v.Image.Repository)
		}
		if repo != "" && bytes.Count(got, []byte("\n")) != bytes.Count(orig, []byte("\n")) {
			t.Errorf("setting image.repository changed more than its line")
		}
	}
}

// A release version is a semantic version Go takes as a module version and
// Helm as a chart version: a pre-release's identifiers are not empty and a
// numeric one has no leading zero (both refuse v1.0.0-01 and v1.0.0-rc..1);
// build metadata is no module version.
func TestCheckVersion(t *testing.T) {
	for v, ok := range map[string]bool{
		"v0.2.0": true, "v1.0.0-rc.1": true, "v1.0.0-0": true, "v1.0.0-0a.x-y": true, "v10.20.30-alpha.10": true,
		"0.2.0": false, "v0.2": false, "v01.2.0": false, "v1.0.0+build.1": false,
		"v1.0.0-01": false, "v1.0.0-rc.01": false, "v1.0.0-rc..1": false, "v1.0.0-.": false, "v1.0.0-rc.": false, "v1.0.0-": false,
	} {
		if err := checkVersion(v); (err == nil) != ok {
			t.Errorf("checkVersion(%q): %v, want accepted %v", v, err, ok)
		}
	}
}

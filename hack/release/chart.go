package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// packageChart writes the chart at dir as dist/<name>-<chart version>.tgz,
// as `helm package --version … --app-version …` would: every file under
// <name>/ but what .helmignore names, with Chart.yaml's version and
// appVersion set and, given a repository, values.yaml's image.repository
// (so that the published chart installs the published image). It returns
// the archive's name.
func packageChart(dir, dist, version, repository string, mtime time.Time) (string, error) {
	chartYAML, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return "", err
	}
	chartYAML, err = setChartVersions(chartYAML, chartVersion(version), version)
	if err != nil {
		return "", err
	}
	var valuesYAML []byte
	if repository != "" {
		if valuesYAML, err = os.ReadFile(filepath.Join(dir, "values.yaml")); err != nil {
			return "", err
		}
		if valuesYAML, err = setImageRepository(valuesYAML, repository); err != nil {
			return "", err
		}
	}
	name := filepath.Base(dir)
	ignore, err := helmignore(filepath.Join(dir, ".helmignore"))
	if err != nil {
		return "", err
	}
	var files []tarFile
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == ".helmignore" || ignored(rel, ignore) {
			return nil
		}
		f := tarFile{name: name + "/" + rel, src: p, mode: 0o644}
		if rel == "Chart.yaml" {
			f.src, f.data = "", chartYAML
		}
		if rel == "values.yaml" && valuesYAML != nil {
			f.src, f.data = "", valuesYAML
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		return "", err
	}
	// Helm reads Chart.yaml first; the rest in a stable order.
	sort.SliceStable(files, func(i, j int) bool {
		ci, cj := files[i].name == name+"/Chart.yaml", files[j].name == name+"/Chart.yaml"
		return ci && !cj || ci == cj && files[i].name < files[j].name
	})
	out := fmt.Sprintf("%s-%s.tgz", name, chartVersion(version))
	return out, writeTarGz(filepath.Join(dist, out), mtime, files)
}

// imageRepositoryLine is values.yaml's image.repository: the first
// two-space-indented repository key after the top-level image: key, its
// comments between.
var imageRepositoryLine = regexp.MustCompile(`(?m)^(image:\n(?:  #.*\n)*  repository: ).*$`)

// setImageRepository sets values.yaml's image.repository.
func setImageRepository(valuesYAML []byte, repository string) ([]byte, error) {
	if len(imageRepositoryLine.FindAll(valuesYAML, -1)) != 1 {
		return nil, fmt.Errorf("values.yaml: want image: with repository: as its first key to set")
	}
	return imageRepositoryLine.ReplaceAll(valuesYAML, []byte("${1}"+strconv.Quote(repository))), nil
}

var (
	versionLine    = regexp.MustCompile(`(?m)^version:.*$`)
	appVersionLine = regexp.MustCompile(`(?m)^appVersion:.*$`)
)

// setChartVersions sets Chart.yaml's top-level version and appVersion lines.
func setChartVersions(chartYAML []byte, version, appVersion string) ([]byte, error) {
	if len(versionLine.FindAll(chartYAML, -1)) != 1 || len(appVersionLine.FindAll(chartYAML, -1)) != 1 {
		return nil, fmt.Errorf("Chart.yaml: want one top-level version and one appVersion line to set")
	}
	chartYAML = versionLine.ReplaceAll(chartYAML, []byte("version: "+version))
	return appVersionLine.ReplaceAll(chartYAML, []byte("appVersion: "+strconv.Quote(appVersion))), nil
}

// helmignore reads the patterns of a .helmignore (none if there is none).
func helmignore(file string) ([]string, error) {
	f, err := os.Open(file)
	if os.IsNotExist(err) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	var pats []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			if strings.ContainsAny(l, "!/") {
				return nil, fmt.Errorf("%s: %q: only file name patterns are understood here", file, l)
			}
			pats = append(pats, l)
		}
	}
	return pats, sc.Err()
}

// ignored: a file name pattern of .helmignore matches the file's base name.
func ignored(rel string, pats []string) bool {
	for _, p := range pats {
		if ok, _ := path.Match(p, path.Base(rel)); ok {
			return true
		}
	}
	return false
}

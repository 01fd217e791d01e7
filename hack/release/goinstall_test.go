package main

import (
	"archive/zip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const modulePath = "github.com/dynwatch/dynwatch"

// `go install github.com/dynwatch/dynwatch/cmd/dynwatch@latest` works as a
// user runs it: the module, served at a version by a module proxy (here a
// file:// one holding this checkout, with the dependencies from the local
// module cache and nothing from the network), builds with no replace
// directive, and the binary, built without -ldflags, reports that version.
func TestGoInstallLatest(t *testing.T) {
	skipUnlessReleaseTests(t)
	t.Parallel()
	const want = "v0.42.0"
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	writeProxyModule(t, proxy, "../..", want)
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	gobin := filepath.Join(tmp, "bin")
	cmd := exec.Command("go", "install", modulePath+"/cmd/dynwatch@latest")
	cmd.Dir = tmp // outside the module: as a user runs it, anywhere
	cmd.Env = append(os.Environ(),
		"GOBIN="+gobin, "GOMODCACHE="+filepath.Join(tmp, "modcache"), "GOWORK=off", "GOTOOLCHAIN=local",
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(strings.TrimSpace(string(modcache)), "cache", "download")),
		"GOSUMDB=off", "GONOSUMDB=*", "GOPRIVATE=", "GOFLAGS=-mod=mod -modcacherw -trimpath", "CGO_ENABLED=0")
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install …/cmd/dynwatch@latest: %v\n%s", err, out)
	}
	t.Logf("go install took %s", time.Since(start).Round(time.Second))
	out, err := exec.Command(filepath.Join(gobin, "dynwatch"), "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "dynwatch "+want+"\n") {
		t.Errorf("dynwatch version of the installed binary: %v\n%s\nwant it to start with: dynwatch %s", err, out, want)
	}
}

// writeProxyModule writes the module at root, as version, into dir in the
// layout a GOPROXY serves (list, .info, .mod, .zip): the files git tracks or
// would track, as a tag of this checkout would hold them, without the
// modules nested in it (hack/charttest, hack/testenv).
func writeProxyModule(t *testing.T, dir, root, version string) {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatal(err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	nested := map[string]bool{}
	for _, f := range files {
		if path.Base(f) == "go.mod" && f != "go.mod" {
			nested[path.Dir(f)+"/"] = true
		}
	}
	at := filepath.Join(dir, filepath.FromSlash(modulePath), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	zf, err := os.Create(filepath.Join(at, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(zf)
	for _, f := range files {
		if inNested(f, nested) {
			continue
		}
		addZipFile(t, zw, filepath.Join(root, filepath.FromSlash(f)), modulePath+"@"+version+"/"+f)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zf.Close(); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]string{"Version": version, "Time": "2026-01-02T03:04:05Z"})
	for name, data := range map[string][]byte{"list": []byte(version + "\n"), version + ".info": info, version + ".mod": mod} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func inNested(f string, nested map[string]bool) bool {
	for d := range nested {
		if strings.HasPrefix(f, d) {
			return true
		}
	}
	return false
}

// addZipFile adds the regular file src as name; what is no regular file
// (a symbolic link, a file deleted but still tracked) a module zip leaves out.
func addZipFile(t *testing.T, zw *zip.Writer, src, name string) {
	t.Helper()
	st, err := os.Lstat(src)
	if err != nil || !st.Mode().IsRegular() {
		return
	}
	r, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := zw.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, r); err != nil {
		t.Fatal(err)
	}
}

// Package arch checks the shape ARCHITECTURE.md describes: which packages may
// import which, and that functions and files stay short enough to read.
package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/dynwatch/dynwatch/"

// floors lists the packages from the bottom up. A package may import packages
// on lower floors and those listed as its peers on its own floor, never one on
// a higher floor: imports flow one way.
var floors = [][]string{
	{"editdist", "event", "fieldpath", "reaper", "timed"},
	{"config", "discovery", "dyninformer", "health", "state"},
	{"payload", "restart", "rules"},
	{"action", "plan", "metrics"},
	{"watcher", "audit", "offline", "rbac", "tail"},
	{"daemon"},
	{"cmd/dynwatch"},
}

// peers are the imports allowed within one floor.
var peers = map[string][]string{
	"rules":  {"payload"},
	"health": {"config"},
	"plan":   {"action"},
}

func floorOf(pkg string) int {
	for i, f := range floors {
		if slices.Contains(f, pkg) {
			return i
		}
	}
	return -1
}

// goList returns the dynwatch packages that pkg imports, directly (deps false)
// or transitively.
func goList(t *testing.T, deps bool, pkgs ...string) []string {
	t.Helper()
	args := []string{"list", "-f", "{{join .Imports \"\\n\"}}"}
	if deps {
		args = []string{"list", "-deps"}
	}
	for _, p := range pkgs {
		args = append(args, module+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestImportsFlowOneWay(t *testing.T) {
	for _, floor := range floors {
		for _, pkg := range floor {
			for _, imp := range goList(t, false, pkg) {
				dep, ok := strings.CutPrefix(imp, module)
				if !ok || strings.HasPrefix(dep, "internal/") {
					continue
				}
				df := floorOf(dep)
				if df < 0 {
					t.Errorf("%s imports %s, which ARCHITECTURE.md does not place: add it to a floor", pkg, dep)
					continue
				}
				if df > floorOf(pkg) || (df == floorOf(pkg) && !slices.Contains(peers[pkg], dep)) {
					t.Errorf("%s imports %s: imports must flow down (see ARCHITECTURE.md)", pkg, dep)
				}
			}
		}
	}
}

func TestShellCommandsLinkNoDaemon(t *testing.T) {
	deps := goList(t, true, "audit", "offline", "rbac", "tail")
	for _, banned := range []string{"go.etcd.io/bbolt", module + "state", module + "watcher", module + "daemon"} {
		if slices.Contains(deps, banned) {
			t.Errorf("audit, offline, rbac or tail depend on %s", banned)
		}
	}
}

// maxLines is the longest a function may be, but for the decoders, whose
// length is one case per kind of YAML node.
const maxLines = 80

var longAllowed = map[string]bool{
	"config/decode.go:decode": true,
}

func TestFunctionsAreShort(t *testing.T) {
	dir := root(t)
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() && rel != "." && (strings.HasPrefix(d.Name(), ".") || rel == "hack") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > maxLines && !longAllowed[rel+":"+fn.Name.Name] {
				t.Errorf("%s: %s is %d lines (at most %d)", rel, fn.Name.Name, n, maxLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

package arch

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxFileLines is the longest a non-test Go file outside hack/ may be: past
// it, a file holds more than one concern.
const maxFileLines = 450

// longFiles returns, for every non-test Go file under dir but outside hack/
// and hidden folders that has more than limit lines, "PATH is N lines (at
// most LIMIT)", PATH relative to dir, sorted by path.
func longFiles(dir string, limit int) ([]string, error) {
	var long []string
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
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := lineCount(b); n > limit {
			long = append(long, fmt.Sprintf("%s is %d lines (at most %d)", filepath.ToSlash(rel), n, limit))
		}
		return nil
	})
	slices.Sort(long)
	return long, err
}

// lineCount counts lines as wc -l does, and a last line without its newline.
func lineCount(b []byte) int {
	n := bytes.Count(b, []byte("\n"))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

func TestFilesAreShort(t *testing.T) {
	long, err := longFiles(root(t), maxFileLines)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range long {
		t.Errorf("%s: split it by concern", l)
	}
}

// TestLongFilesFindsWhatIsTooLong runs the file size check on a tree made for
// it: only the non-test Go file over the limit outside hack/ and hidden folders
// is reported.
func TestLongFilesFindsWhatIsTooLong(t *testing.T) {
	dir := t.TempDir()
	lines := func(n int) string { return "package p\n" + strings.Repeat("//\n", n-1) }
	files := map[string]string{
		"a/long.go":           lines(11),
		"a/limit.go":          lines(10),
		"a/unterminated.go":   lines(10) + "// no newline",
		"a/long_test.go":      lines(50),
		"a/notes.txt":         lines(50),
		"a/b/deep.go":         lines(12),
		"hack/tool/main.go":   lines(50),
		"a/hack/nothack.go":   lines(11),
		".cache/x/gen.go":     lines(50),
		"a/.hidden/hidden.go": lines(50),
	}
	for name, body := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := longFiles(dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"a/b/deep.go is 12 lines (at most 10)",
		"a/hack/nothack.go is 11 lines (at most 10)",
		"a/long.go is 11 lines (at most 10)",
		"a/unterminated.go is 11 lines (at most 10)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("longFiles =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLineCount(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", 0},
		{"one line", "a\n", 1},
		{"no newline at the end", "a\nb", 2},
		{"blank lines", "\n\n\n", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lineCount([]byte(tc.in)); got != tc.want {
				t.Errorf("lineCount(%q) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
}

// TestLongFilesChecksACheckoutInAHiddenFolder: the check skips hidden folders
// inside the tree, not the tree itself when the checkout's own folder name
// starts with a dot (a worktree under .worktrees/, a CI cache, a mirror).
func TestLongFilesChecksACheckoutInAHiddenFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".checkout")
	path := filepath.Join(dir, "a", "long.go")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("package a\n"+strings.Repeat("//\n", 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := longFiles(dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a/long.go is 11 lines (at most 10)"}; !slices.Equal(got, want) {
		t.Errorf("longFiles in %s = %q, want %q", dir, got, want)
	}
}

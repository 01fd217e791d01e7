package docs

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// maxReadmeLines is the longest README.md may be: what fits a first visit.
// The rest belongs in a page under docs/.
const maxReadmeLines = 300

// root is the repository, two levels up from this package.
const root = "../.."

// pages returns README.md and every Markdown file under docs/, as paths
// relative to the repository.
func pages(t *testing.T) []string {
	t.Helper()
	out := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// prose returns a Markdown file's lines outside fenced code blocks, with
// inline code spans blanked, so that neither a `# comment` in a shell
// example nor a `[x](y)` in code is read as a heading or a link.
func prose(text string) []string {
	var out []string
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			out = append(out, "")
			continue
		}
		if fenced {
			out = append(out, "")
			continue
		}
		out = append(out, codeSpan.ReplaceAllString(l, "``"))
	}
	return out
}

var (
	codeSpan = regexp.MustCompile("`[^`]*`")
	// heading is an ATX heading; a closing run of '#' follows a space.
	heading  = regexp.MustCompile(`^#{1,6}\s+(.*?)(?:\s+#+)?\s*$`)
	scheme   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	link     = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// anchors returns the anchors GitHub makes of a Markdown file's headings:
// the text lower-cased, inline code and link syntax reduced to their text,
// every character but letters, digits, spaces, '-' and '_' dropped, spaces
// made '-', and a repeated anchor suffixed -1, -2, ….
func anchors(text string) map[string]bool {
	// Headings keep their code spans' text: prose blanks them for links only.
	raw := strings.Split(text, "\n")
	out := map[string]bool{}
	seen := map[string]int{}
	for i, l := range prose(text) {
		if l == "" || !heading.MatchString(l) {
			continue
		}
		h := heading.FindStringSubmatch(raw[i])[1]
		a := slug(linkText.ReplaceAllString(h, "$1"))
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every relative link of README.md and docs/ names a file that exists and,
// with a #anchor, a heading of that file.
func TestLinksResolve(t *testing.T) {
	for _, page := range pages(t) {
		text := read(t, page)
		for n, l := range prose(text) {
			for _, m := range link.FindAllStringSubmatch(l, -1) {
				if p := problem(t, page, m[1]); p != "" {
					t.Errorf("%s:%d: link %s: %s", page, n+1, m[1], p)
				}
			}
		}
	}
}

// problem says what is wrong with target, a link of page, or "" when it
// resolves. Links with a scheme (https:, mailto:) are not checked.
func problem(t *testing.T, page, target string) string {
	if scheme.MatchString(target) {
		return ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	rel := page
	if file != "" {
		rel = filepath.ToSlash(filepath.Join(filepath.Dir(page), file))
		if strings.HasPrefix(rel, "../") {
			return "leaves the repository"
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			return "no such file " + rel
		}
	}
	if anchor == "" {
		return ""
	}
	if !strings.HasSuffix(rel, ".md") {
		return "an anchor into " + rel + ", which is no Markdown page"
	}
	if !anchors(read(t, rel))[anchor] {
		return "no heading of " + rel + " makes the anchor #" + anchor
	}
	return ""
}

// README.md is what a first visit reads: at most maxReadmeLines lines.
func TestReadmeFitsAFirstVisit(t *testing.T) {
	n := strings.Count(strings.TrimRight(read(t, "README.md"), "\n"), "\n") + 1
	if n > maxReadmeLines {
		t.Errorf("README.md is %d lines, at most %d: move what a first visit does not need to a page under docs/ and link it", n, maxReadmeLines)
	}
}

// docs/README.md, the index, links every page of docs/ (its folders, such as
// recipes, are linked from the pages that use them).
func TestIndexLinksEveryPage(t *testing.T) {
	index := read(t, "docs/README.md")
	linked := map[string]bool{}
	for _, l := range prose(index) {
		for _, m := range link.FindAllStringSubmatch(l, -1) {
			file, _, _ := strings.Cut(m[1], "#")
			linked[filepath.ToSlash(filepath.Join("docs", file))] = true
		}
	}
	for _, page := range pages(t) {
		if path.Dir(page) == "docs" && page != "docs/README.md" && !linked[page] {
			t.Errorf("docs/README.md does not link %s: add it to the index", page)
		}
	}
}

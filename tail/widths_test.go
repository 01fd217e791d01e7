package tail

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dynwatch/dynwatch/event"
)

// A table's columns are as wide as what it prints, as kubectl's tabwriter
// sizes them: the header and the rows held (the initial list) line up,
// each column as wide as its widest cell plus three spaces; a later row with
// a longer cell widens its column from then on, and never cuts a value.
func TestTableSizesColumnsToWhatItPrints(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(Options{Output: "table", Out: &out, Location: time.UTC})
	row := func(name string) {
		t.Helper()
		pl := &event.Payload{Type: event.Add, Resource: event.Resource{Version: "v1", Resource: "configmaps"}, Namespace: "ns",
			Name: name, Object: json.RawMessage(`{}`), Time: "2026-11-29T12:00:00.000Z"}
		if err := p.Print(pl); err != nil {
			t.Fatal(err)
		}
	}
	p.Hold()
	if err := p.Header(); err != nil {
		t.Fatal(err)
	}
	row("a")
	row("bb")
	if out.Len() != 0 {
		t.Fatalf("printed while held:\n%s", out.String())
	}
	if err := p.Release(); err != nil {
		t.Fatal(err)
	}
	row("a-name-much-longer-than-the-others")
	row("c")
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{
		"TIME       EVENT   RESOURCE     NAMESPACE   NAME   AGE         CHANGED",
		"12:00:00   add     configmaps   ns          a      <unknown>   -",
		"12:00:00   add     configmaps   ns          bb     <unknown>   -",
		"12:00:00   add     configmaps   ns          a-name-much-longer-than-the-others   <unknown>   -",
		"12:00:00   add     configmaps   ns          c                                    <unknown>   -",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), strings.Join(want, "\n"))
	}
}

// The CHANGED column a table row cuts at 40 characters is cut between
// characters, never inside one: a path of non-ASCII keys is not shown with
// a broken character's bytes escaped.
func TestChangedCutBetweenCharacters(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(Options{Output: "table", Out: &out, Location: time.UTC, NoHeaders: true})
	pl := &event.Payload{Type: event.Update, Resource: event.Resource{Version: "v1", Resource: "configmaps"}, Namespace: "ns",
		Name: "a", Object: json.RawMessage(`{}`), Time: "2026-11-29T12:00:00.000Z",
		Changed: []string{"data.ключ-" + strings.Repeat("значение", 6)}}
	if err := p.Print(pl); err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(out.Bytes()) || !strings.Contains(out.String(), "…") || strings.Contains(out.String(), `\ufffd`) || strings.Contains(out.String(), `\x`) || strings.ContainsRune(out.String(), utf8.RuneError) {
		t.Errorf("the cut CHANGED column is not valid UTF-8 or not cut:\n%q", out.String())
	}
}

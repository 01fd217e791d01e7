package tail

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/event"
)

// An object's text reaches the terminal with no control character in it: an
// annotation holding OSC and CSI sequences neither retitles nor clears the
// terminal through a --columns cell or a name, in table, wide and name
// output; -o json and yaml keep the value exact.
func TestTerminalEscapesAreQuoted(t *testing.T) {
	t.Parallel()
	const evil = "\x1b]0;pwned\x07\x1b[2J\r\x9b2J\u009dx\xffok\ttab\nnl"
	fields := map[string]json.RawMessage{"note": json.RawMessage(`"\u001b]0;pwned\u0007\u001b[2J\r\u009b2J\u009dx\ufffdok\ttab\nnl"`)}
	pl := &event.Payload{Type: event.Update, Resource: event.Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment"},
		Namespace: "prod", Name: "web" + evil, UID: "u-1" + evil, ResourceVersion: "42", Changed: []string{"metadata.annotations.x" + evil},
		Fields: fields, Object: json.RawMessage(`{}`), Time: "2026-11-29T12:00:00.000Z"}
	for _, o := range []string{"table", "wide", "name"} {
		var out bytes.Buffer
		p := NewPrinter(Options{Output: o, Out: &out, Location: time.UTC, Columns: []Column{{Name: "note", Path: "metadata.annotations.note"}}})
		if err := p.Print(pl); err != nil {
			t.Fatal(err)
		}
		got := strings.TrimSuffix(out.String(), "\n")
		for _, r := range got {
			if isControl(r) || r == '\t' {
				t.Errorf("-o %s writes control character %U: %q", o, r, got)
				break
			}
		}
		if !strings.Contains(got, `web\x1b]0;pwned\x07\x1b[2J\x0d\x9b2J\u009dx\xffok tab nl`) {
			t.Errorf("-o %s does not show the name's escapes visibly: %q", o, got)
		}
		if o != "name" && !strings.Contains(got, `\x1b]0;pwned\x07\x1b[2J\x0d\u009b2J\u009dx`+"\ufffd"+`ok tab nl`) {
			t.Errorf("-o %s does not show the column's escapes visibly: %q", o, got)
		}
	}
	var out bytes.Buffer
	p := NewPrinter(Options{Output: "json", Out: &out})
	if err := p.Print(pl); err != nil {
		t.Fatal(err)
	}
	var back event.Payload
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || string(back.Fields["note"]) != string(fields["note"]) {
		t.Errorf("-o json changed the value: %v %s", err, back.Fields["note"])
	}
}

package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/rules"
)

// The table is for a terminal: a field whose value holds a C1 control
// character (U+009B is CSI: U+009B 2 J clears an xterm), which JSON leaves as
// it is, is written with a \u escape, the same JSON value.
func TestTableWritesNoControlCharacter(t *testing.T) {
	t.Parallel()
	f, err := config.Parse("t.yaml", []byte(`
apiVersion: dynwatch/v1alpha1
actions: [{name: out, log: {}}]
rules: [{name: r, resources: [{kind: ConfigMap}], fields: {note: metadata.annotations.note}, actions: [out]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	rs, ps := rules.Compile(f)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	note, _ := json.Marshal("a\u009b2J\u0085b\x7f")
	pl := &event.Payload{Rule: "r", Name: "c", Namespace: "ns", Resource: event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap"},
		Fields: map[string]json.RawMessage{"note": note}}
	var b bytes.Buffer
	if err := WriteTable(&b, []Finding{{Rule: rs[0], Payload: pl}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(out, "\u009b\u0085\x7f") {
		t.Errorf("the table writes control characters: %q", out)
	}
	if !strings.Contains(out, `note="a\u009b2J\u0085b\u007f"`) {
		t.Errorf("the field does not read as its JSON with escapes: %q", out)
	}
}

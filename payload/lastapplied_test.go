package payload

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
)

// kubectl apply keeps the object as applied in an annotation: a redact entry
// of any kind blanks that annotation too, or the values it redacts would
// reach every payload in clear through their copy there, as the built-in
// Secret entry blanks it for Secrets.
func TestRedactEntryBlanksLastApplied(t *testing.T) {
	t.Parallel()
	f, err := config.Parse("t.yaml", []byte(`
apiVersion: dynwatch/v1alpha1
redact: [{kind: ConfigMap, paths: [data.token]}]
actions: [{name: out, log: {}}]
rules: [{name: r, resources: [{kind: ConfigMap}], actions: [out]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	red := NewRedactor(f.Config.Redact)
	cm := event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	obj := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns","annotations":{"keep":"me",` +
		`"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"v1\",\"data\":{\"token\":\"SENTINEL-4e1d\"},\"kind\":\"ConfigMap\"}\n"}},` +
		`"data":{"token":"SENTINEL-4e1d","other":"x"}}`)
	got := red.Redact(cm, obj)
	if strings.Contains(string(got), "SENTINEL") {
		t.Errorf("the redacted object holds the token: %s", got)
	}
	for p, want := range map[string]string{"metadata.annotations.keep": "me", "data.other": "x", "data.token": Redacted} {
		if v := gjson.GetBytes(got, p).Str; v != want {
			t.Errorf("%s reads %q, want %q", p, v, want)
		}
	}
	if is := red.Secret(cm, obj); is == nil || !is("metadata.annotations") {
		t.Error("the annotations are kept in clear in the state file")
	}
	pod := event.Resource{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true}
	if got := red.Redact(pod, obj); &got[0] != &obj[0] {
		t.Error("a Pod was copied; only configured kinds are touched")
	}
}

package payload

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
)

// Whether a path's value is kept only as a digest is decided by value: every
// path that reads a redacted value, however spelled, counts; paths that read
// only what the redacted object shows too do not.
func TestSecretByValue(t *testing.T) {
	t.Parallel()
	red := NewRedactor(config.DefaultRedact())
	secret := event.Resource{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}
	obj := []byte(`{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","namespace":"ns","labels":{"b":"2","a":"1"},` +
		`"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"stringData\":{\"password\":\"SENTINEL\"}}"}},` +
		`"data":{"password":"U0VOVElORUw="},"type":"Opaque","n":12345678901234567890}`)
	is := red.Secret(secret, obj)
	for _, p := range []string{"data", "data.password", "dat?", "dat*.password", `d\ata.password`, "@this.data", "@this", "metadata",
		"metadata.annotations", "metadata.annotations.*", "metadata.annotations|@values", "metadata.annotations|@values|0", "data|@values"} {
		if !is(p) {
			t.Errorf("%s reads a redacted value and is kept in clear", p)
		}
	}
	for _, p := range []string{"metadata.name", "metadata.labels", "metadata.labels.a", "kind", "type", "n", "data|@keys", "metadata.annotations|@keys", "missing", "stringData"} {
		if is(p) {
			t.Errorf("%s reads no redacted value and is kept as a digest", p)
		}
	}
	cm := event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	if red.Secret(cm, obj) != nil {
		t.Error("a ConfigMap has secret paths; only configured kinds do")
	}
	if NewRedactor(config.DefaultRedact()).Secret(secret, []byte(`{"kind":"Secret","metadata":{"name":"s"}}`)) != nil {
		t.Error("a Secret without data has secret paths")
	}
}

// A path that picks a member by its position (@values, @reverse) may pick a
// redacted value in the object as the API server orders its fields and
// another one in the redacted object, whose keys are sorted: it is decided by
// what it reads from each, not from the object re-encoded.
func TestSecretByValueWhateverTheOrder(t *testing.T) {
	t.Parallel()
	red := NewRedactor(config.DefaultRedact())
	secret := event.Resource{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}
	// A Secret's fields in the order the API server writes them.
	obj := []byte(`{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","namespace":"ns"},"data":{"password":"U0VOVElORUw="},"type":"Opaque"}`)
	is := red.Secret(secret, obj)
	for _, p := range []string{"@values|3", "@values.3", "@values|@reverse|1", "@reverse|@values|1", "@values|@reverse|@reverse|3"} {
		if !is(p) {
			t.Errorf("%s reads %s and is kept in clear", p, gjson.GetBytes(obj, p).Raw)
		}
	}
	for _, p := range []string{"metadata", "metadata.name", "type", "kind"} {
		if is(p) {
			t.Errorf("%s reads no redacted value (%s) and is kept as a digest", p, gjson.GetBytes(obj, p).Raw)
		}
	}
}

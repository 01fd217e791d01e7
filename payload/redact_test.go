package payload

import (
	"strings"
	"testing"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
)

func TestRedact(t *testing.T) {
	red := NewRedactor(config.DefaultRedact())
	secret := event.Resource{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}
	obj := []byte(`{"kind":"Secret","data":{"password":"U0VOVElORUw="},"metadata":{"name":"s","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"stringData\":{\"password\":\"SENTINEL\"}}","keep":"me"}}}`)
	got := string(red.Redact(secret, obj))
	for _, leak := range []string{"U0VOVElORUw=", "SENTINEL"} {
		if strings.Contains(got, leak) {
			t.Errorf("redacted object still holds %q: %s", leak, got)
		}
	}
	for _, keep := range []string{`"password":"<redacted>"`, `"keep":"me"`} {
		if !strings.Contains(got, keep) {
			t.Errorf("redacted object lacks %s: %s", keep, got)
		}
	}
	cm := event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	if got := red.Redact(cm, obj); &got[0] != &obj[0] {
		t.Error("a ConfigMap was copied; only configured kinds should be touched")
	}
}

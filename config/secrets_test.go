package config

import (
	"strings"
	"testing"
)

// Secrets are every value a ${VAR} of the file took, in every field that
// takes one, and mask them (and the forms a receiver or a command may echo
// them in) in text; a value shorter than MinSecretLen is left alone.
func TestSecretsMaskEveryExpandedValue(t *testing.T) {
	env := map[string]string{
		"DW_T_URL": "url-secret", "DW_T_HEADER": "header-secret", "DW_T_ENV": "env-secret",
		"DW_T_BROKER": "broker-host", "DW_T_USER": "sasl-user", "DW_T_PASS": `pa"ss/wo rd`,
		"DW_T_NATS": "nats-secret", "DW_T_TOKEN": "token-secret", "DW_T_SHORT": "abc",
		"DW_T_LONG": "token-secret-longer",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	f, err := Parse("t.yaml", []byte(`apiVersion: dynwatch/v1alpha1
actions:
  - {name: w, webhook: {url: "https://h/${DW_T_URL}", headers: {Authorization: "Bearer ${DW_T_HEADER}", X-Short: "${DW_T_SHORT}"}}}
  - {name: e, exec: {command: [x], env: {A: "${DW_T_ENV}"}}}
  - {name: k, kafka: {brokers: ["${DW_T_BROKER}:9092"], topic: t, tls: {}, sasl: {mechanism: SCRAM-SHA-512, username: "${DW_T_USER}", password: "${DW_T_PASS}"}}}
  - {name: n, nats: {url: "nats://u:${DW_T_NATS}@h:4222", subject: s, token: "${DW_T_TOKEN}"}}
  - {name: n2, nats: {url: "nats://h:4222", subject: s, token: "${DW_T_LONG}"}}
rules: [{name: r, resources: [{kind: ConfigMap}], actions: [w, e, k, n, n2]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	s := f.Secrets()
	for _, tc := range []struct{ in, want string }{
		{"GET https://h/url-secret: 401 header-secret", "GET https://h/<redacted>: 401 <redacted>"},
		{"A=env-secret B=broker-host:9092 sasl-user", "A=<redacted> B=<redacted>:9092 <redacted>"},
		{`password "pa\"ss/wo rd" or pa"ss/wo rd or pa%22ss%2Fwo+rd`, `password "<redacted>" or <redacted> or <redacted>`},
		{"nats://u:nats-secret@h token-secret", "nats://u:<redacted>@h <redacted>"},
		// The longer value first: it is masked whole.
		{"token-secret-longer", "<redacted>"},
		// Too short to mask.
		{"abc abcd", "abc abcd"},
	} {
		if got := s.Mask(tc.in); got != tc.want {
			t.Errorf("Mask(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// A tail that begins inside a value drops what the cut left of it.
	if got := s.MaskTail("ret-longer and header-secret"); got != " and <redacted>" {
		t.Errorf("MaskTail = %q", got)
	}
	if got := s.MaskTail("and header-secret"); got != "and <redacted>" {
		t.Errorf("MaskTail of a tail that begins with no value = %q", got)
	}
	// A head that ends inside a value drops what the cut left of it.
	if got := s.MaskHead("header-secret and token-secr"); got != "<redacted> and " {
		t.Errorf("MaskHead = %q", got)
	}
	var none *Secrets
	if got := none.Mask("header-secret"); got != "header-secret" {
		t.Errorf("nil Secrets masked %q", got)
	}
	if strings.Contains(s.Mask(strings.Repeat("x", 10)), SecretMask) {
		t.Error("masked what no variable gave")
	}
}

// A check's message that quotes a field's value masks what a ${VAR} put in.
func TestProblemsMaskSecrets(t *testing.T) {
	t.Setenv("DW_T_BROKER_LIST", "b1-secret:9092,b2:9092")
	_, err := Parse("t.yaml", []byte(`apiVersion: dynwatch/v1alpha1
actions:
  - {name: k, kafka: {brokers: ["${DW_T_BROKER_LIST}"], topic: t}}
rules: [{name: r, resources: [{kind: ConfigMap}], actions: [k]}]
`))
	if err == nil {
		t.Fatal("two brokers in one item: no problem")
	}
	if msg := err.Error(); strings.Contains(msg, "b1-secret") || !strings.Contains(msg, SecretMask) {
		t.Errorf("problem = %s", msg)
	}
}

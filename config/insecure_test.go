package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// warnSuffix ends every warning about a credential in clear or a receiver
// not verified.
const warnSuffix = " (--strict or security.allowInsecure: false makes this an error)"

// insecureWarnings returns the warnings of f that are about security, as
// FILE:LINE: path: message lines.
func insecureWarnings(f *File) []string {
	var out []string
	for _, w := range f.Warnings() {
		if strings.HasSuffix(w.Msg, warnSuffix) {
			out = append(out, w.Error())
		}
	}
	return out
}

// Each shape that sends a credential in clear, or turns certificate checks
// off, is a warning at its field's line; what sends none, or sends it over
// TLS, is not. Loopback hosts are warned about like any other.
func TestInsecureShapesWarn(t *testing.T) {
	t.Setenv("DYNWATCH_TEST_INSECURE_UNSET", "")
	os.Unsetenv("DYNWATCH_TEST_INSECURE_UNSET")
	creds := filepath.Join(t.TempDir(), "dynwatch.creds")
	if err := os.WriteFile(creds, []byte("-----BEGIN NATS USER JWT-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const w = "i.yaml:"
	for _, c := range []struct {
		name, action string
		want         []string
	}{
		{"kafka PLAIN without tls", "kafka:\n      brokers: [k:9092]\n      topic: t\n      sasl: {mechanism: PLAIN, username: u, password: p}\n",
			[]string{w + "7: actions[0].kafka.sasl.mechanism: warning: SASL PLAIN without tls sends the password to the brokers in clear: set tls, or use SCRAM-SHA-256 or SCRAM-SHA-512, which never send it" + warnSuffix}},
		{"kafka PLAIN with tls", "kafka:\n      brokers: [k:9092]\n      topic: t\n      tls: {}\n      sasl: {mechanism: PLAIN, username: u, password: p}\n", nil},
		{"kafka SCRAM without tls", "kafka:\n      brokers: [k:9092]\n      topic: t\n      sasl: {mechanism: SCRAM-SHA-512, username: u, password: p}\n", nil},
		{"kafka PLAIN over tls unverified", "kafka:\n      brokers: [k:9092]\n      topic: t\n      tls:\n        insecureSkipVerify: true\n      sasl: {mechanism: PLAIN, username: u, password: p}\n",
			[]string{w + "8: actions[0].kafka.tls.insecureSkipVerify: warning: true turns certificate checks off: anyone on the path can pose as the receiver and read what is sent, credentials included; trust its CA with caFile instead" + warnSuffix}},
		{"nats token on nats://", "nats:\n      url: nats://nats:4222\n      subject: s\n      token: tok\n",
			[]string{w + "7: actions[0].nats.token: warning: the token crosses the network in clear to nats://nats:4222 (no tls): set tls, or use tls:// or wss:// URLs" + warnSuffix}},
		{"nats token on ws://", "nats:\n      url: ws://nats:8080\n      subject: s\n      token: tok\n",
			[]string{w + "7: actions[0].nats.token: warning: the token crosses the network in clear to ws://nats:8080 (no tls): set tls, or use tls:// or wss:// URLs" + warnSuffix}},
		{"nats token, one URL of two in clear", "nats:\n      url: tls://a:4222,nats://b:4222\n      subject: s\n      token: tok\n",
			[]string{w + "7: actions[0].nats.token: warning: the token crosses the network in clear to nats://b:4222 (no tls): set tls, or use tls:// or wss:// URLs" + warnSuffix}},
		{"nats token on tls://", "nats:\n      url: tls://nats:4222\n      subject: s\n      token: tok\n", nil},
		{"nats token with tls set", "nats:\n      url: nats://nats:4222\n      subject: s\n      token: tok\n      tls: {}\n", nil},
		{"nats user and password in the URL", "nats:\n      url: nats://dw:S3CRET@nats:4222\n      subject: s\n",
			[]string{w + "5: actions[0].nats.url: warning: the credentials in the URL cross the network in clear to nats://nats:4222 (no tls): set tls, or use tls:// or wss:// URLs" + warnSuffix}},
		{"nats credsFile on nats://", "nats:\n      url: nats://nats:4222\n      subject: s\n      credsFile: " + creds + "\n", nil},
		{"nats without credentials", "nats:\n      url: nats://nats:4222\n      subject: s\n", nil},
		{"nats token from an unset variable", "nats:\n      url: nats://nats:4222\n      subject: s\n      token: ${DYNWATCH_TEST_INSECURE_UNSET}\n",
			[]string{w + "7: actions[0].nats.token: warning: the token crosses the network in clear to nats://nats:4222 (no tls): set tls, or use tls:// or wss:// URLs" + warnSuffix}},
		{"webhook Authorization on http://", "webhook:\n      url: http://hooks.example:8080/x\n      headers:\n        Authorization: Bearer S3CRET\n        X-Source: dynwatch\n",
			[]string{w + "7: actions[0].webhook.headers.Authorization: warning: the Authorization header crosses the network in clear to http://hooks.example:8080: use an https:// URL" + warnSuffix}},
		{"webhook Authorization on loopback http://", "webhook:\n      url: http://127.0.0.1:9/x\n      headers: {Authorization: Bearer S3CRET}\n",
			[]string{w + "6: actions[0].webhook.headers.Authorization: warning: the Authorization header crosses the network in clear to http://127.0.0.1:9: use an https:// URL" + warnSuffix}},
		{"webhook API key header on http://", "webhook:\n      url: http://hooks.example/x\n      headers:\n        X-Api-Key: S3CRET\n",
			[]string{w + "7: actions[0].webhook.headers.X-Api-Key: warning: the X-Api-Key header crosses the network in clear to http://hooks.example: use an https:// URL" + warnSuffix}},
		{"webhook Authorization on https://", "webhook:\n      url: https://hooks.example/x\n      headers: {Authorization: Bearer S3CRET}\n", nil},
		{"webhook plain headers on http://", "webhook:\n      url: http://hooks.example/x\n      headers: {X-Source: dynwatch, Content-Type: text/plain}\n", nil},
		{"webhook user and password in an http:// URL", "webhook:\n      url: http://dw:S3CRET@hooks.example/x\n",
			[]string{w + "5: actions[0].webhook.url: warning: the credentials in the URL cross the network in clear to http://hooks.example: use an https:// URL" + warnSuffix}},
		{"webhook token in an http:// URL's query", "webhook:\n      url: http://hooks.example/x?access_token=S3CRET&team=a\n",
			[]string{w + "5: actions[0].webhook.url: warning: the query parameter \"access_token\" crosses the network in clear to http://hooks.example: use an https:// URL" + warnSuffix}},
		{"webhook unverified https", "webhook:\n      url: https://hooks.example/x\n      tls: {insecureSkipVerify: true}\n",
			[]string{w + "6: actions[0].webhook.tls.insecureSkipVerify: warning: true turns certificate checks off: anyone on the path can pose as the receiver and read what is sent, credentials included; trust its CA with caFile instead" + warnSuffix}},
		{"webhook URL from an unset variable", "webhook:\n      url: ${DYNWATCH_TEST_INSECURE_UNSET}\n      headers: {Authorization: Bearer S3CRET}\n", nil},
		{"nats unverified", "nats:\n      url: nats://nats:4222\n      subject: s\n      tls: {insecureSkipVerify: true}\n",
			[]string{w + "7: actions[0].nats.tls.insecureSkipVerify: warning: true turns certificate checks off: anyone on the path can pose as the receiver and read what is sent, credentials included; trust its CA with caFile instead" + warnSuffix}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := "apiVersion: dynwatch/v1alpha1\nactions:\n  - name: a\n    " + c.action +
				"rules: [{name: r, resources: [{kind: ConfigMap}], actions: [a]}]\n"
			f, err := ParseWith("i.yaml", []byte(src), Options{UnsetEnvWarns: true})
			if err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			if got := insecureWarnings(f); !slices.Equal(got, c.want) {
				t.Errorf("warnings\n got: %q\nwant: %q\n%s", got, c.want, src)
			}
			for _, w := range f.Warnings() {
				if strings.Contains(w.Msg, "S3CRET") {
					t.Errorf("a warning shows the secret: %s", w.Error())
				}
			}
		})
	}
}

// security.allowInsecure: false makes each shape a problem (the file does
// not load); true, as leaving it out, makes it a warning.
func TestAllowInsecureFalseRefuses(t *testing.T) {
	t.Parallel()
	const body = `actions:
  - name: a
    kafka:
      brokers: [k:9092]
      topic: t
      sasl: {mechanism: PLAIN, username: u, password: p}
rules: [{name: r, resources: [{kind: ConfigMap}], actions: [a]}]
`
	const msg = "SASL PLAIN without tls sends the password to the brokers in clear: set tls, or use SCRAM-SHA-256 or SCRAM-SHA-512, which never send it"
	_, err := Parse("i.yaml", []byte("apiVersion: dynwatch/v1alpha1\nsecurity: {allowInsecure: false}\n"+body))
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("allowInsecure: false: want Problems, got %v", err)
	}
	if want := "i.yaml:8: actions[0].kafka.sasl.mechanism: " + msg + " (refused: security.allowInsecure is false)"; ps.Error() != want {
		t.Errorf("allowInsecure: false:\n got: %s\nwant: %s", ps.Error(), want)
	}
	for _, sec := range []string{"", "security: {allowInsecure: true}\n", "security: {}\n"} {
		f, err := Parse("i.yaml", []byte("apiVersion: dynwatch/v1alpha1\n"+sec+body))
		if err != nil {
			t.Fatalf("%q: %v", sec, err)
		}
		line := "7"
		if sec != "" {
			line = "8"
		}
		want := []string{"i.yaml:" + line + ": actions[0].kafka.sasl.mechanism: warning: " + msg + warnSuffix}
		if got := insecureWarnings(f); !slices.Equal(got, want) {
			t.Errorf("%q: warnings %q, want %q", sec, got, want)
		}
	}
}

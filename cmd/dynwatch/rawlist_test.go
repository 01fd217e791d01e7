package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A list as the API server sends it (kubectl get --raw) has items without
// kind or apiVersion: test reads them as the list's kind, as run's informers
// do, so that a SecretList's items are Secrets, redacted in --explain and in
// the payload, and selected by a rule on secrets.
func TestTestReadsRawListItemsAsTheListsKind(t *testing.T) {
	t.Parallel()
	const b64 = "U0VOVElORUwtNGUxZA==" // SENTINEL-4e1d
	list := filepath.Join(t.TempDir(), "secrets.json")
	if err := os.WriteFile(list, []byte(`{"kind":"SecretList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[`+
		`{"metadata":{"name":"s","namespace":"ns","uid":"u1","resourceVersion":"3"},"data":{"password":"`+b64+`"},"type":"Opaque"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "test", "--config", "testdata/secret-rules.yaml", "--rule", "password-changed", "--new", list, "--explain")
	if strings.Contains(stdout+stderr, b64) {
		t.Errorf("test shows the Secret's data in clear:\n%s%s", stdout, stderr)
	}
	if code != exitOK || !strings.Contains(stdout, `found "<redacted>": holds`) {
		t.Errorf("exit %d: want the rule to fire on the Secret, its data redacted:\n%s%s", code, stdout, stderr)
	}
}

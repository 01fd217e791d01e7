package action

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TLS is verified by default, a caFile makes a private CA trusted, and
// insecureSkipVerify turns verification off; each webhook has its own transport.
func TestWebhookTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		tls     string
		wantErr string
	}{
		{"verified by default", `{}`, "certificate"},
		{"caFile trusts the server", fmt.Sprintf(`{caFile: %q}`, caFile), ""},
		{"insecureSkipVerify", `{insecureSkipVerify: true}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := webhook(t, fmt.Sprintf(`{url: %q, tls: %s}`, srv.URL, tt.tls))
			if w.client.Transport == http.DefaultTransport {
				t.Fatal("the webhook uses the process-wide default transport")
			}
			err := w.Send(context.Background(), delivery("o", 1))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Send: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Send = %v, want an error about %q", err, tt.wantErr)
			}
		})
	}
}

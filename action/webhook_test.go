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

// A webhook URL often holds a token in its path or query: errors (and so logs)
// show scheme and host only, for a refused connection as for a 5xx, and the
// URL may take ${VAR} from the environment.
func TestWebhookErrorsHideTheURLPath(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/hooks/T0KEN" || r.URL.RawQuery != "key=S3CRET" {
			t.Errorf("request to %s", r.URL)
		}
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer srv.Close()
	t.Setenv("HOOK_PATH", "hooks/T0KEN")
	w := webhook(t, fmt.Sprintf(`{url: "%s/${HOOK_PATH}?key=S3CRET"}`, srv.URL))
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	refused := webhook(t, fmt.Sprintf(`{url: "%s/hooks/T0KEN?key=S3CRET"}`, closed.URL))
	for name, s := range map[string]*Webhook{"5xx": w, "refused": refused} {
		err := s.Send(context.Background(), delivery("o", 1))
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		if msg := err.Error(); strings.Contains(msg, "T0KEN") || strings.Contains(msg, "S3CRET") || !strings.Contains(msg, "http://127.0.0.1:") {
			t.Errorf("%s: error %q shows the URL's path or query, or no host", name, msg)
		}
	}
}

package action

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dynwatch/dynwatch/config"
)

// A receiver that refuses a delivery and says back the credential it was
// given (in its answer's first 512 bytes, or across their end) puts none of
// it in the error (and so the logs): the config's ${VAR} values are masked.
func TestWebhookAnswerMasksSecrets(t *testing.T) {
	const secret = "WEBHOOK-ANSWER-S3CRET-0123456789"
	t.Setenv("DW_HOOK_SECRET", secret)
	for _, tc := range []struct {
		name string
		pad  int // bytes the answer has before the credential
		body func(auth string) string
	}{
		{"in the answer", 0, nil},
		{"across the answer's 512th byte", 512 - len("Bearer ") - 10, nil},
		// Three times in full, then cut where dynwatch stops reading
		// (512 bytes and the secret's length): masked, the three are
		// shorter, and what the read left of the fourth falls within 512.
		{"across the end of what is read", 0, func(auth string) string {
			v := strings.TrimPrefix(auth, "Bearer ") + " "
			head := strings.Repeat(v, 3)
			return head + strings.Repeat("p", 512+len(secret)-10-len(head)) + v + strings.Repeat("z", 600)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.WriteHeader(http.StatusUnauthorized)
				if tc.body != nil {
					_, _ = io.WriteString(w, tc.body(r.Header.Get("Authorization")))
					return
				}
				_, _ = io.WriteString(w, strings.Repeat("p", tc.pad)+r.Header.Get("Authorization")+" is not welcome "+strings.Repeat("z", 600))
			}))
			defer srv.Close()
			a, f := compileFirst(t, oneAction("hook", `webhook: {url: "`+srv.URL+`", headers: {Authorization: "Bearer ${DW_HOOK_SECRET}"}}`))
			s, _, err := a.Build(Env{Secrets: f.Secrets()})
			if err != nil {
				t.Fatal(err)
			}
			err = s.Send(context.Background(), delivery("o", 1))
			if err == nil {
				t.Fatal("a 401 was a success")
			}
			msg := err.Error()
			for i := 0; i+config.MinSecretLen <= len(secret); i++ {
				if part := secret[:len(secret)-i]; strings.Contains(msg, part) {
					t.Fatalf("the error holds %q of the secret: %s", part, msg)
				}
			}
			if !strings.Contains(msg, "401") || (tc.pad == 0 && tc.body == nil && !strings.Contains(msg, "Bearer <redacted> is not welcome")) {
				t.Errorf("error = %s", msg)
			}
		})
	}
}

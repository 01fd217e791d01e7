package action

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/dynwatch/dynwatch/config"
)

// A failing command's output reaches its error (and so the WARN line) with
// every value a ${VAR} of the config took masked, also where the error's
// 2 KiB tail begins inside the value.
func TestExecOutputMasksSecrets(t *testing.T) {
	const secret = "EXEC-OUTPUT-S3CRET-0123456789"
	t.Setenv("DW_EXEC_SECRET", secret)
	for _, tc := range []struct {
		name string
		pad  int // bytes the command prints after its environment
	}{
		{"whole output", 0},
		// The output ends "first=<secret> again=<secret>yyy…". Its last
		// 2048 bytes begin 10 bytes into the second secret.
		{"the tail cut through the secret", 2048 - len(secret) + 10},
		// What dynwatch keeps (2048 bytes and the secret's length) begins
		// 10 bytes into the first; masked, the second is shorter, and what
		// the cut left of the first falls within the last 2048 bytes.
		{"what is kept cut through the secret", 2048 + 10 - len(" again=") - len(secret)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, _ := execActionEnv(t, "printenv", "10s", `{TOKEN: "${DW_EXEC_SECRET}"}`)
			x.env = append(x.env, "HELPER_PAD="+strconv.Itoa(tc.pad))
			_, f := compileFirst(t, oneAction("x", `webhook: {url: "http://localhost/", headers: {Authorization: "${DW_EXEC_SECRET}"}}`))
			x.secrets = f.Secrets()
			err := x.Send(context.Background(), delivery("o", 1))
			if err == nil {
				t.Fatal("the command's failure was not reported")
			}
			msg := err.Error()
			for i := 0; i+config.MinSecretLen <= len(secret); i++ {
				if part := secret[i:]; strings.Contains(msg, part) {
					t.Fatalf("the error holds %q of the secret: %s", part, msg)
				}
			}
			if tc.pad == 0 && !strings.Contains(msg, "TOKEN=<redacted>") {
				t.Errorf("the error does not show the masked value: %s", msg)
			}
			if tc.pad > 0 && (!strings.Contains(msg, "<redacted>") || !strings.HasSuffix(msg, strings.Repeat("y", tc.pad))) {
				t.Errorf("the error does not end with the output's end, the secret masked: %s", msg)
			}
		})
	}
}

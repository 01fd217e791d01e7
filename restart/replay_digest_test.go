package restart

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/payload"
	"github.com/dynwatch/dynwatch/state"
)

// The old object of a replayed update is rebuilt from the record, whose
// redacted values are digests: a digest never reaches a payload, where a
// receiver could try a dictionary on it (a file an older dynwatch wrote holds
// unkeyed SHA-256 digests), and the value reads as a redacted one does.
func TestReplayPayloadHoldsNoDigest(t *testing.T) {
	t.Parallel()
	res := event.Resource{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}
	secret := func(rv, password string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"ns","uid":"u1","resourceVersion":"` + rv + `",` +
			`"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"stringData\":{\"password\":\"` + password + `\"}}"}},` +
			`"data":{"password":"aHVudGVyMg=="}}`)
	}
	red := payload.NewRedactor(config.DefaultRedact())
	key := state.DigestKey("0123456789abcdef0123456789abcdef")
	paths := []string{"metadata", "metadata.annotations", "data"}
	rec := recordOf(event.New(event.Add, res, secret("1", "hunter2"), nil, time.Now()), paths, red, key)
	legacy := &state.Record{Namespace: "ns", Name: "s", ResourceVersion: "1", Values: map[string]json.RawMessage{}}
	for p, v := range rec.Values {
		// What a file written before keyed digests holds.
		raw := state.Values(nil, secret("1", "hunter2"), []string{p}, nil)[p]
		sum := sha256.Sum256(raw)
		legacy.Values[p] = json.RawMessage(`{"$dynwatchSHA256":"` + hex.EncodeToString(sum[:]) + `"}`)
		if !strings.Contains(string(v), "$dynwatchHMAC") {
			t.Fatalf("%s recorded as %s, want a digest", p, v)
		}
	}
	for name, r := range map[string]*state.Record{"keyed": rec, "legacy": legacy} {
		replay := Replay(event.New(event.Update, res, secret("2", "hunter3"), nil, time.Now()), r, event.Replay, key)
		if replay == nil {
			t.Fatalf("%s: no replay", name)
		}
		pl := payload.Build(payload.Prepare(red, replay), "r", nil)
		if old := string(pl.OldObject); strings.Contains(old, "$dynwatch") || !strings.Contains(old, payload.Redacted) {
			t.Errorf("%s: the replay's old object shows a digest: %s", name, old)
		}
		if len(pl.Changed) == 0 {
			t.Errorf("%s: the replay says nothing changed", name)
		}
	}
}

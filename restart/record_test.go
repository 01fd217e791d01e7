package restart

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/payload"
	"github.com/dynwatch/dynwatch/state"
)

// A record keeps no Secret value in clear, whatever path a rule reads it by
// (a wildcard, a modifier, an escape), and a replay from it still tells a
// changed Secret from an unchanged one at each of those paths.
func TestRecordKeepsNoSecretByAnyPath(t *testing.T) {
	t.Parallel()
	const sentinel = "SENTINEL-4e1d"
	b64 := base64.StdEncoding.EncodeToString([]byte(sentinel))
	res := event.Resource{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}
	secret := func(data string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"ns","uid":"u1","resourceVersion":"1",` +
			`"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"stringData\":{\"password\":\"` + sentinel + `\"}}"}},` +
			`"data":{"password":"` + data + `"}}`)
	}
	paths := []string{"dat?", "metadata.annotations.*", "metadata.annotations|@values", "@this.data", `d\ata.password`, "metadata.name"}
	red := payload.NewRedactor(config.DefaultRedact())
	key := state.DigestKey("0123456789abcdef0123456789abcdef")
	ev := event.New(event.Add, res, secret(b64), nil, time.Now())
	rec := recordOf(ev, paths, red, key)
	for p, v := range rec.Values {
		if strings.Contains(string(v), b64) || strings.Contains(string(v), sentinel) {
			t.Errorf("the record of %s holds the secret in clear: %s", p, v)
		}
	}
	if string(rec.Values["metadata.name"]) != `"s"` {
		t.Errorf("metadata.name recorded as %s", rec.Values["metadata.name"])
	}
	rec.Hash, _ = state.Hash(key, ev.Object)

	changed := event.New(event.Update, res, secret(base64.StdEncoding.EncodeToString([]byte("other"))), nil, time.Now())
	changed.ResourceVersion = "2"
	replay := Replay(changed, rec, event.Replay, key)
	if got, want := replay.ChangedRecorded(), []string{"@this.data", `d\ata.password`, "dat?"}; !slices.Equal(got, want) {
		t.Errorf("changed %v, want %v", got, want)
	}
	same := event.New(event.Update, res, slices.Clone(ev.Object), nil, time.Now())
	same.ResourceVersion = "2"
	same.Object = []byte(strings.Replace(string(same.Object), `"resourceVersion":"1"`, `"resourceVersion":"2"`, 1))
	if r := Replay(same, rec, event.Replay, key); r != nil {
		t.Errorf("an unchanged Secret replays changed %v", r.ChangedRecorded())
	}
}

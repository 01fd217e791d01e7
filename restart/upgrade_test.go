package restart

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/payload"
	"github.com/dynwatch/dynwatch/state"
)

// A file written before content hashes were keyed holds unkeyed ones: after
// the upgrade, an object that only got a new version (a no-op write, an etcd
// restore) is still known unchanged and replays nothing, and one whose
// content changed still replays.
func TestReplayAfterUpgradeComparesUnkeyedHashes(t *testing.T) {
	t.Parallel()
	res := event.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	cm := func(rv, v string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns","uid":"u1","resourceVersion":"` + rv + `"},"data":{"k":"` + v + `"}}`)
	}
	key := state.DigestKey("0123456789abcdef0123456789abcdef")
	red := payload.NewRedactor(config.DefaultRedact())
	rec := recordOf(event.New(event.Add, res, cm("1", "a"), nil, time.Now()), []string{"data.k"}, red, key)
	// The hash as an older dynwatch made it: SHA-256 of the object without
	// its version, its first 16 bytes in hex.
	old := cm("1", "a")
	i := bytes.Index(old, []byte(`"1"`))
	sum := sha256.Sum256(append(append([]byte{}, old[:i]...), old[i+3:]...))
	rec.Hash = hex.EncodeToString(sum[:16])

	if r := Replay(event.New(event.Update, res, cm("2", "a"), nil, time.Now()), rec, event.Replay, key); r != nil {
		t.Errorf("an object that only got a new version replays as %s, changed %v", r.Type, r.ChangedRecorded())
	}
	if r := Replay(event.New(event.Update, res, cm("2", "b"), nil, time.Now()), rec, event.Replay, key); r == nil || r.Type != event.Update {
		t.Errorf("a changed object replays %v, want an update", r)
	}
}

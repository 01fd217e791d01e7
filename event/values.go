package event

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"github.com/tidwall/gjson"
)

// digestField marks a recorded value that is a keyed digest of the real one:
// what restart state keeps of a redacted value, enough to tell that it
// changed. legacyDigestField marked the unkeyed SHA-256 that files written
// before kept; such a value still compares, and is replaced by a keyed one
// when its record is next written.
const (
	digestField       = "$dynwatchHMAC"
	legacyDigestField = "$dynwatchSHA256"
)

// DigestKey is the random key of one state file's digests: an HMAC, so that
// the file's digests cannot be matched against a dictionary of likely values
// without the key.
type DigestKey []byte

// Digest returns the recorded form of a value that must not be kept in clear:
// {"$dynwatchHMAC": "<hex of HMAC-SHA256 of its raw JSON under k>"}.
func (k DigestKey) Digest(raw string) json.RawMessage {
	m := hmac.New(sha256.New, k)
	m.Write([]byte(raw))
	return json.RawMessage(`{"` + digestField + `":"` + hex.EncodeToString(m.Sum(nil)) + `"}`)
}

// Redacted is what a redacted value reads in every output (payload.Redacted),
// and what a digest reads as in an old object rebuilt from a record.
const Redacted = "<redacted>"

// IsDigest reports whether a recorded value is a digest (keyed, or unkeyed as
// an older dynwatch kept them) rather than the value in clear.
func IsDigest(recorded json.RawMessage) bool {
	return gjson.GetBytes(recorded, gjson.Escape(digestField)).Exists() ||
		gjson.GetBytes(recorded, gjson.Escape(legacyDigestField)).Exists()
}

// Same reports whether a recorded value (raw JSON or a Digest under k; nil:
// the path was missing) stands for the current raw JSON value ("" when
// missing).
func (k DigestKey) Same(recorded json.RawMessage, raw string) bool {
	switch {
	case recorded == nil || raw == "":
		return recorded == nil && raw == ""
	case gjson.GetBytes(recorded, gjson.Escape(digestField)).Exists():
		return hmac.Equal(recorded, k.Digest(raw))
	case gjson.GetBytes(recorded, gjson.Escape(legacyDigestField)).Exists():
		sum := sha256.Sum256([]byte(raw))
		return string(recorded) == `{"`+legacyDigestField+`":"`+hex.EncodeToString(sum[:])+`"}`
	}
	return string(recorded) == raw
}

// Differs reports whether the value at path differs between the event's old
// and new object. A replayed update compares with the values recorded before
// the restart, path by path (query paths included, digests of redacted values
// against the digest of the new value under DigestKey); a live update
// compares the objects.
func (e *Event) Differs(path string) bool {
	cur := gjson.GetBytes(e.Object, path).Raw
	if e.OldValues != nil {
		return !e.DigestKey.Same(e.OldValues[path], cur)
	}
	return gjson.GetBytes(e.OldObject, path).Raw != cur
}

// ChangedRecorded lists, sorted, the recorded paths whose values differ: the
// changed paths of a replayed update, of which only those paths are known.
func (e *Event) ChangedRecorded() []string {
	var out []string
	for p := range e.OldValues {
		if e.Differs(p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

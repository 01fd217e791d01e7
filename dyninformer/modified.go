package dyninformer

import (
	"bytes"
	"time"
)

// timeKey opens the time of a managedFields entry, as the API server writes
// it ("time":"2026-12-01T15:04:05Z").
var timeKey = []byte(`"time":"`)

// latestTime returns the latest "time" of a managedFields array's entries, in
// Unix seconds (0: none). The server writes each as RFC 3339 in UTC to the
// second, so the latest is the greatest string and only that one is parsed.
// A "time" key deeper in an entry (inside fieldsV1, where keys are "f:…",
// "k:…" or "v:…") cannot be one: those keys are prefixed.
func latestTime(mf []byte) int64 {
	var latest []byte
	for {
		i := bytes.Index(mf, timeKey)
		if i < 0 {
			break
		}
		mf = mf[i+len(timeKey):]
		end := bytes.IndexByte(mf, '"')
		if end < 0 {
			break
		}
		if bytes.Compare(mf[:end], latest) > 0 {
			latest = mf[:end]
		}
		mf = mf[end:]
	}
	if latest == nil {
		return 0
	}
	t, err := time.Parse(time.RFC3339, string(latest))
	if err != nil {
		return 0
	}
	return t.Unix()
}

// modifiedAt is when the object was last changed, as its managedFields say
// (zero: they said nothing).
func (o *Object) modifiedAt() time.Time {
	if o.modified == 0 {
		return time.Time{}
	}
	return time.Unix(o.modified, 0)
}

package watcher

import (
	"time"

	"github.com/tidwall/gjson"

	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/state"
)

// baselineOnly reports whether a listed object is recorded without a
// comparison: after a reshard (state.Tx.Resharded), an object of the share
// without a record of its own moved in from another shard, which had it and
// fired its events; it is new to this shard only, and fires nothing (as a
// first start's baseline). But one created after the previous shard spec
// last ran (state.Tx.ReshardedAfter) is new to the cluster: no shard saw it,
// and it is compared, so its add replays. Objects with a record compare as
// after any restart.
func (l *listing) baselineOnly(tx *state.Tx, res state.Resource, ev *event.Event) bool {
	if !l.resharded {
		return false
	}
	if _, _, recorded := tx.Version(res, ev.UID); recorded {
		return false
	}
	after, ok := tx.ReshardedAfter()
	return !ok || !createdSince(ev.Object, after)
}

// createdSince reports whether the object's creationTimestamp (the API
// server's clock, to the second) is not before at (this machine's clock)
// truncated to the second: an object created in the second the previous
// spec stopped counts as new, so that it fires once at least (a moved one
// created in that second fires a second add: at-least-once). A skew between
// the two clocks moves the boundary by as much (see README, Scaling out).
func createdSince(obj []byte, at time.Time) bool {
	ts := gjson.GetBytes(obj, "metadata.creationTimestamp").Str
	created, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return false
	}
	return !created.Before(at.Truncate(time.Second))
}

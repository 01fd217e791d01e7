package watcher

import (
	"github.com/dynwatch/dynwatch/state"
)

// baselineOnly reports whether a listed object is recorded without a
// comparison: after a reshard (state.Tx.Resharded), an object of the share
// without a record of its own moved in from another shard, which had it and
// fired its events; it is new to this shard only, and fires nothing (as a
// first start's baseline). Objects with a record compare as after any
// restart.
func (l *listing) baselineOnly(tx *state.Tx, res state.Resource, uid string) bool {
	if !l.resharded {
		return false
	}
	_, _, recorded := tx.Version(res, uid)
	return !recorded
}

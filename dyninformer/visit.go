package dyninformer

import (
	"github.com/dynwatch/dynwatch/event"
)

// Visit hands the object namespace/name that k's informer caches to fn, as
// an add event built as the informer builds its events, within the watch's
// serial handler calls: what fn does (a timer's evaluation, which may
// deliver) is ordered with the watch's own events, never racing one.
// found is false when the cache does not hold the object; synced is false
// when k is not watched, or has not listed yet (fn is not called then).
func (m *Manager) Visit(k Key, namespace, name string, fn func(*event.Event)) (found, synced bool) {
	m.mu.Lock()
	e, ok := m.entries[k]
	m.mu.Unlock()
	if !ok || e.ctrl == nil || !hasSynced(e.ctrl) {
		return false, false
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	ran := e.calls.serial(func() {
		obj, exists, err := e.store.GetByKey(key)
		if err != nil || !exists {
			return
		}
		if ev := m.event(e, event.Add, obj, nil); ev != nil {
			found = true
			fn(ev)
		}
	})
	return found, ran
}

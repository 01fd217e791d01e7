package watcher

import (
	"github.com/dynwatch/dynwatch/action"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/plan"
)

// Hooks for this package's tests only.

// Manager returns the informer manager of the watched set.
func (w *Watcher) Manager() *dyninformer.Manager { return w.srcs[0].mgr }

// ClusterManager returns the informer manager of the named cluster, nil if
// the watcher has none by that name.
func (w *Watcher) ClusterManager(name string) *dyninformer.Manager {
	for _, s := range w.sources() {
		if s.name == name {
			if !s.connected.Load() {
				return nil
			}
			return s.mgr
		}
	}
	return nil
}

// Queue returns the named action's current queue.
func (w *Watcher) Queue(name string) *action.Queue { return w.pipe.Load().queues[name] }

// Refresh reads discovery and makes the watched set match it, as the refresh
// loop does.
func (w *Watcher) Refresh() {
	for _, s := range w.sources() {
		w.refresh(s)
	}
}

// Reload runs file from now on, as a reload of the followed config does.
func (w *Watcher) Reload(file *plan.File) error { return w.reload(file) }

// ReloadFile loads the config at path and runs it if it is valid, as a reload
// of the followed config does.
func (w *Watcher) ReloadFile(path string) error { return w.reloadFile(path) }

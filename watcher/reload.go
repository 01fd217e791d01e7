package watcher

import (
	"bytes"
	"context"
	"errors"
	"os"
	"reflect"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/rules"
)

// reload runs file from now on. Only the difference is applied: informers for
// resources no longer selected stop, new ones start, and those still needed keep
// running without listing again; actions whose spec is unchanged keep their
// queues. The caller has validated file.
func (w *Watcher) reload(file *plan.File) error {
	gone, err := w.reloadLocked(file)
	if w.removing != nil && len(gone) > 0 {
		w.removing()
	}
	stopRemoved(gone) // w.mu released: a source that stops may wait for it
	return err
}

// reloadLocked is reload with w.mu taken; it returns the sources of the
// clusters the file removed, to stop.
func (w *Watcher) reloadLocked(file *plan.File) ([]*source, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.File()
	if err := ClustersRestartOnly(old, file); err != nil {
		return nil, err
	}
	queues, err := w.acts.buildQueues(file)
	if err != nil {
		return nil, err
	}
	diff := diffFiles(old, file, func(name string) bool { return w.acts.queues[name] == queues[name] })
	retired := w.acts.handOff(queues, file)
	if !reflect.DeepEqual(file.Config.State, old.Config.State) {
		w.log.Warn("state changed in the config: it applies after a restart")
	}
	if file.Config.Defaults.Resync != old.Config.Defaults.Resync {
		w.log.Warn("defaults.resync changed: it applies to informers started from now on")
	}
	gone := w.reconcileClustersLocked(file)
	added := map[string]bool{}
	for _, r := range file.Rules {
		if old.Rule(r.Name) == nil {
			added[r.Name] = true
		}
	}
	w.pipe.Store(&pipeline{file: file, log: w.log, metrics: w.metrics, queues: queueMap(queues), clusters: w.pipe.Load().clusters})
	if err := w.configureTimers(file, false); err != nil {
		// The waits stay as they were; those of a removed rule are
		// forgotten when they fall due, or at the next start.
		w.log.Error("state: cannot forget the waits of rules the config no longer has", "err", err)
	}
	for _, s := range w.srcs {
		if s.cat.Load() != nil {
			w.applyReloadLocked(s, file, diff, added)
		}
	}
	// Only now that events go to the new queues are removed actions retired.
	w.acts.retire(retired)
	return gone, nil
}

// applyReloadLocked applies a reloaded file's rules to the running watches;
// w.mu is held.
func (w *Watcher) applyReloadLocked(s *source, file *plan.File, diff reloadDiff, added map[string]bool) {
	mgr := s.mgr
	diff.watchesBefore = mgr.Watches()
	ch := w.applyLocked(s, change{file: file, cat: s.cat.Load(), lists: dyninformer.ListsKnown, added: added})
	s.log.Info("config reloaded", append([]any{"config", file.Path, "rules", len(file.Rules), "actions", len(file.Config.Actions)},
		diff.attrs(mgr.Watches())...)...)
	// Informers that keep running do not list again: an added rule with
	// onStart: all sees their objects from the cache instead.
	fresh := map[dyninformer.Key]bool{}
	for _, st := range ch.Started {
		fresh[st.Key()] = true
	}
	p := w.pipe.Load()
	for _, k := range mgr.Watches() {
		if !fresh[k] && wantsReplay(p.rulesOf(k), added, k) {
			// Synchronous: the handler only enqueues (or submits to the commit
			// loop), neither of which needs w.mu.
			mgr.Replay(k, ch.Epoch)
		}
	}
}

// wantsReplay reports whether a rule a reload added, with onStart: all, covers
// the running watch k: it then sees the objects k's cache holds.
func wantsReplay(rs []*rules.Rule, added map[string]bool, k dyninformer.Key) bool {
	for _, r := range rs {
		if added[r.Name] && r.OnStart == config.OnStartAll && (k.Namespace == "" || r.InNamespace(k.Namespace)) {
			return true
		}
	}
	return false
}

// reloadFile loads and validates the config at path, with the running file's
// load options (run's --strict holds for every reload), and, if it is valid,
// runs it from now on (see reload) and logs its warnings. If it is not, every
// problem is logged and the running config stays.
func (w *Watcher) reloadFile(path string) error {
	file, err := plan.LoadWith(path, w.File().LoadOptions())
	if err != nil {
		var ps config.Problems
		if errors.As(err, &ps) {
			for _, p := range ps {
				w.log.Error("invalid config: "+p.Msg, "file", p.File, "line", p.Line, "field", p.Path)
			}
		} else {
			w.log.Error("cannot read config", "err", err)
		}
		w.log.Error("config not reloaded: the running config stays", "config", path)
		w.metrics.Reloaded(false)
		return err
	}
	if err := w.reload(file); err != nil {
		w.log.Error("config not reloaded: the running config stays", "config", path, "err", err)
		w.metrics.Reloaded(false)
		return err
	}
	file.LogWarnings(w.log)
	w.metrics.Reloaded(true)
	return nil
}

// FollowConfig reloads the config at path on every signal from hup and whenever
// the file's content differs from the running config's and from the last one
// tried (checked every interval, see ReadIfChanged; a bad file is reported
// once, not at every check). It returns when ctx is done.
func (w *Watcher) FollowConfig(ctx context.Context, path string, interval time.Duration, hup <-chan struct{}) {
	last := w.File().Source
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			w.log.Info("SIGHUP: reloading the config", "config", path)
		case <-t.C:
			if _, changed := ReadIfChanged(path, last); !changed {
				continue
			}
			w.log.Info("config file changed: reloading", "config", path)
		}
		last, _ = os.ReadFile(path)
		_ = w.reloadFile(path)
	}
}

// ReadIfChanged reads the config file at path and reports whether it could be
// read and its content differs from seen, the content last loaded or tried.
// Content, not modification time: a ConfigMap's symlink swap counts, a touch
// does not. It is the one test of a changed config file, for the reloads of a
// running watcher and for a replica that comes to lead.
func ReadIfChanged(path string, seen []byte) ([]byte, bool) {
	data, err := os.ReadFile(path)
	if err != nil || bytes.Equal(data, seen) {
		return nil, false
	}
	return data, true
}

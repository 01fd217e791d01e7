package watcher

import (
	"bytes"
	"context"
	"errors"
	"os"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/plan"
)

// ReloadFile loads and validates the config at path and, if it is valid, runs it
// from now on (see Reload). If it is not, every problem is logged and the running
// config stays.
func (w *Watcher) ReloadFile(path string) error {
	file, err := plan.Load(path)
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
	if err := w.Reload(file); err != nil {
		w.log.Error("config not reloaded: the running config stays", "config", path, "err", err)
		w.metrics.Reloaded(false)
		return err
	}
	w.metrics.Reloaded(true)
	return nil
}

// FollowConfig reloads the config at path on every signal from hup and whenever
// the file's content differs from the running config's and from the last one
// tried (checked every interval; content, not modification time, so that a
// ConfigMap's symlink swap counts and a touch does not, and a bad file is
// reported once, not at every check). It returns when ctx is done.
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
			cur, err := os.ReadFile(path)
			if err != nil || bytes.Equal(cur, last) {
				continue
			}
			w.log.Info("config file changed: reloading", "config", path)
		}
		last, _ = os.ReadFile(path)
		_ = w.ReloadFile(path)
	}
}

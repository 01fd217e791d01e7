// Package daemon owns the life of `dynwatch run`: it opens (or resets) the
// restart state, builds the watcher, follows the config file, and runs until it
// is told to stop. The operations server and leader election plug in here, not
// in the command line.
//
// It may import every package below it; nothing imports it but cmd/dynwatch.
package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"time"

	k8sdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/state"
	"github.com/dynwatch/dynwatch/watcher"
)

// Options configure a daemon run.
type Options struct {
	// File is the loaded config; File.Path is followed for changes.
	File *plan.File
	// ConfigCheckInterval is how often the config file is checked for changes.
	// Default: 2s.
	ConfigCheckInterval time.Duration
	// ResetState discards the state file of state.path before opening it.
	ResetState bool
	// Dynamic and Discovery are the cluster's clients.
	Dynamic   dynamic.Interface
	Discovery k8sdiscovery.DiscoveryInterface
	// Logger receives dynwatch's own logs. Default: slog.Default().
	Logger *slog.Logger
	// Stdout is where `log: {}` actions write. Default: os.Stdout.
	Stdout io.Writer
	// Hup delivers a reload request (SIGHUP); nil: none.
	Hup <-chan struct{}
}

// ErrFailed is returned when the daemon could not start or stopped on an
// error; what went wrong has been logged.
var ErrFailed = errors.New("dynwatch failed")

// Run runs the daemon until ctx is done, then stops the watches, drains the
// action queues for the shutdown grace period, and returns after everything it
// started has stopped.
func Run(ctx context.Context, o Options) error {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.ConfigCheckInterval <= 0 {
		o.ConfigCheckInterval = 2 * time.Second
	}
	log, file := o.Logger, o.File
	if file.Config.Server != nil && file.Config.Server.Address != "" {
		log.Warn("server.address is set, but /metrics, /healthz and /readyz are not served yet by this build", "address", file.Config.Server.Address)
	}
	store, err := openState(log, file, o.ResetState)
	if err != nil {
		return err
	}
	if store != nil {
		defer store.Close()
	}
	w, err := watcher.New(file, o.Dynamic, o.Discovery, watcher.Options{Logger: log, Stdout: o.Stdout, Store: store})
	if err != nil {
		log.Error("cannot build actions", "err", err)
		return ErrFailed
	}
	log.Info("dynwatch started", "config", file.Path, "rules", len(file.Rules), "actions", len(file.Config.Actions))
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		w.FollowConfig(ctx, file.Path, o.ConfigCheckInterval, o.Hup)
	}()
	err = w.Run(ctx)
	<-followed
	if err != nil {
		log.Error("dynwatch stopped", "err", err)
		return ErrFailed
	}
	log.Info("dynwatch stopped")
	return nil
}

// openState opens the state file of state.path (after discarding it, if reset
// is asked for); without state.path it returns nil.
func openState(log *slog.Logger, file *plan.File, reset bool) (*state.Store, error) {
	if !file.StateEnabled() {
		if reset {
			log.Warn("--reset-state given but the config has no state.path: nothing to reset")
		}
		return nil, nil
	}
	path := file.Config.State.Path
	if reset {
		recs, pending, err := state.Reset(path)
		if err != nil {
			log.Error("cannot reset the state", "path", path, "err", err)
			return nil, ErrFailed
		}
		if recs < 0 {
			log.Warn("state reset: the old file was unreadable; starting over", "path", path)
		} else {
			log.Warn("state reset: starting over", "path", path, "objectRecords", recs, "undeliveredEvents", pending)
		}
	}
	store, err := state.Open(path)
	if err != nil {
		log.Error("cannot open the state", "err", err)
		return nil, ErrFailed
	}
	return store, nil
}

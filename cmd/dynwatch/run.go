package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/klog/v2"

	"github.com/dynwatch/dynwatch/rules"
	"github.com/dynwatch/dynwatch/watcher"
)

func cmdRun(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "run", "--config FILE [flags]",
		"Watches the resources the config's rules select and delivers matching events to their actions.\n"+
			"Stops cleanly on SIGINT or SIGTERM, draining the action queues for up to shutdownGrace.\n"+
			"SIGHUP, or a change of the file, reloads the config; an invalid one is logged and the old one keeps running.")
	var kf kubeFlags
	var lf logFlags
	kf.register(fs)
	lf.register(fs)
	config := fs.String("config", "", "the config file (required); reloaded on SIGHUP and when its content changes")
	reloadEvery := fs.Duration("config-check-interval", 2*time.Second, "how often the config file is checked for changes")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *config == "" || fs.NArg() > 0 {
		fmt.Fprintln(e.stderr, "dynwatch run: --config FILE is required and no arguments are taken")
		fs.Usage()
		return exitUsage
	}
	log, err := lf.logger(e.stderr)
	if err != nil {
		fmt.Fprintln(e.stderr, "dynwatch run:", err)
		return exitUsage
	}
	klog.SetSlogLogger(log)
	file, code := loadConfig(e.stderr, *config)
	if file == nil {
		return code
	}
	dyn, disc, err := kf.clients()
	if err != nil {
		log.Error("cannot reach the cluster", "err", err)
		return exitFailure
	}
	w, err := watcher.New(file, dyn, disc, watcher.Options{Logger: log, Stdout: e.stdout})
	if err != nil {
		log.Error("cannot build actions", "err", err)
		return exitFailure
	}
	ctx, hup, stop := signalContext(ctx, e)
	defer stop()
	log.Info("dynwatch started", "config", *config, "rules", len(file.Rules), "actions", len(file.Config.Actions))
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		w.FollowConfig(ctx, *config, *reloadEvery, hup)
	}()
	err = w.Run(ctx)
	<-followed
	if err != nil {
		log.Error("dynwatch stopped", "err", err)
		return exitFailure
	}
	log.Info("dynwatch stopped")
	return exitOK
}

// loadConfig loads and validates a config file; on failure it prints every
// problem, one per line, and returns the exit code.
func loadConfig(stderr io.Writer, path string) (*rules.File, int) {
	file, err := rules.Load(path)
	if err != nil {
		var ps rules.Problems
		if errors.As(err, &ps) {
			for _, p := range ps {
				fmt.Fprintln(stderr, p.Error())
			}
			fmt.Fprintf(stderr, "%s: %d problem(s); nothing was started\n", path, len(ps))
			return nil, exitUsage
		}
		fmt.Fprintln(stderr, "dynwatch:", err)
		return nil, exitUsage
	}
	for _, w := range file.Warnings {
		fmt.Fprintf(stderr, "%s: warning: %s\n", path, w)
	}
	return file, exitOK
}

func cmdCheck(_ context.Context, e *env, args []string) int {
	fs := flagSet(e, "check", "--config FILE",
		"Validates a config file offline and prints every problem as FILE:LINE: FIELD.PATH: message.\n"+
			"Exits 0 when the file is valid and 2 when it is not.")
	config := fs.String("config", "", "the config file (required)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *config == "" || fs.NArg() > 0 {
		fmt.Fprintln(e.stderr, "dynwatch check: --config FILE is required and no arguments are taken")
		fs.Usage()
		return exitUsage
	}
	file, code := loadConfig(e.stderr, *config)
	if file == nil {
		return code
	}
	fmt.Fprintf(e.stdout, "%s: ok: %d rule(s), %d action(s)\n", *config, len(file.Rules), len(file.Config.Actions))
	return exitOK
}

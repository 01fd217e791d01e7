package main

import (
	"context"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/daemon"
	"github.com/dynwatch/dynwatch/internal/dumpable"
	"github.com/dynwatch/dynwatch/internal/memory"
	"github.com/dynwatch/dynwatch/metrics"
)

func cmdRun(ctx context.Context, e *env, args []string) int {
	fs := flagSet(e, "run", "--config FILE [flags]",
		"Watches the resources the config's rules select and delivers matching events to their actions.\n"+
			"Logs at start each credential an action sends in clear (and each certificate check turned off);\n"+
			"with --strict (or security.allowInsecure: false) it refuses to start on one, exit 2.\n"+
			"Stops cleanly on SIGINT or SIGTERM, draining the action queues for up to shutdownGrace.\n"+
			"SIGHUP, or a change of the file, reloads the config; an invalid one is logged and the old one keeps running.")
	var kf kubeFlags
	var lf logFlags
	kf.register(fs)
	lf.register(fs, "info", "debug")
	cfgPath := fs.String("config", "", "the config file (required); reloaded on SIGHUP and when its content changes")
	strict := fs.Bool("strict", false, "refuse to start, and refuse a reload, on a credential sent in clear or a certificate check turned off, as with security.allowInsecure: false (default: a warning)")
	reloadEvery := fs.Duration("config-check-interval", 2*time.Second, "how often the config file is checked for changes")
	resetState := fs.Bool("reset-state", false, "discard the state file of state.path (saying how much it held) and start over")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	path, msg := configArg("run", *cfgPath, fs.Args())
	if msg != "" {
		return usageError(fs, "%s", msg)
	}
	*cfgPath = path
	log, err := lf.logger(e.stderr)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	// Not dumpable: the commands of exec actions, which run as dynwatch's
	// user, cannot read its environment (the config's ${VAR} secrets) or
	// memory through /proc.
	if err := dumpable.Disable(); err != nil {
		log.Warn("exec commands can read dynwatch's environment and memory", "err", err)
	}
	memory.SetLimit(log, "/")
	file, code := loadValidConfig(e.stderr, *cfgPath, config.Options{Strict: *strict}, "; nothing was started")
	if file == nil {
		return code
	}
	file.LogWarnings(log)
	logProxies(log, file)
	kf.log = log
	c, err := kf.connect()
	if err != nil {
		log.Error("cannot reach the cluster", "err", err)
		return exitFailure
	}
	ctx, hup, stop := signalContext(ctx, e)
	defer stop()
	err = daemon.Run(ctx, daemon.Options{
		File:                file,
		ConfigCheckInterval: *reloadEvery,
		ResetState:          *resetState,
		Informers:           c.raw,
		Discovery:           c.disc,
		Kube:                c.typed,
		Logger:              log,
		Stdout:              e.stdout,
		Source:              c.host,
		Connect:             kf.connectCluster,
		Fingerprint:         kf.fingerprintCluster,
		Hup:                 hup,
		Build:               metrics.Build(built()),
	})
	if err != nil {
		return exitFailure
	}
	return exitOK
}

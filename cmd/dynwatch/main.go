// Command dynwatch watches any Kubernetes resource and turns add/update/delete
// events into actions, as a YAML rule file says.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit codes, as the README lists them.
const (
	exitOK      = 0
	exitFailure = 1 // findings, or a failure at run time
	exitUsage   = 2 // bad usage or an invalid config
)

// env is what a command reads and writes, so that tests can run commands in process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// signals, when set, replaces the process's SIGINT/SIGTERM/SIGHUP handling.
	signals <-chan os.Signal
}

type command struct {
	name  string
	short string
	run   func(ctx context.Context, e *env, args []string) int
}

func commands() []command {
	return []command{
		{"run", "watch the cluster and deliver events as the config says", cmdRun},
		{"check", "validate a config file, printing every problem", cmdCheck},
		{"resources", "list the resources discovery sees", cmdResources},
		{"rbac", "print the least-privilege RBAC a config needs", cmdRBAC},
		{"tail", "follow several resource types at once, filtered by field values", cmdTail},
		{"audit", "list current objects once and report those that match the rules", cmdAudit},
		{"test", "evaluate one rule offline on object files", cmdTest},
		{"version", "print version information", cmdVersion},
	}
}

func main() {
	os.Exit(cli(context.Background(), &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:]))
}

func cli(ctx context.Context, e *env, args []string) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.stderr, cmds)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range cmds {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	fmt.Fprintf(e.stderr, "dynwatch: unknown command %q\n\n", args[0])
	usage(e.stderr, cmds)
	return exitUsage
}

func usage(w io.Writer, cmds []command) {
	fmt.Fprintln(w, "dynwatch watches any Kubernetes resource and turns its changes into actions.")
	fmt.Fprintln(w, "\nUsage: dynwatch COMMAND [flags]\n\nCommands:")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.short)
	}
	fmt.Fprintln(w, "\nRun 'dynwatch COMMAND --help' for a command's flags.")
}

// flagSet returns a flag set whose errors and help go to e.stderr.
func flagSet(e *env, name, synopsis, description string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: dynwatch %s %s\n\n%s\n\nFlags:\n", name, synopsis, description)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args; ok is false when the command should return code at once
// (help was asked for, or the flags were wrong).
func parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK, false
	case err != nil:
		return exitUsage, false
	}
	return exitOK, true
}

// kubeFlags are the standard kubeconfig flags every command takes.
type kubeFlags struct {
	kubeconfig string
	context    string
	// log, when set, receives API server warnings, each once.
	log *slog.Logger
}

// registerOffline accepts the kubeconfig flags on a command that works offline,
// so that every command takes them and scripts can pass them blindly.
func (k *kubeFlags) registerOffline(fs *flag.FlagSet) {
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "accepted for uniformity; this command does not contact a cluster")
	fs.StringVar(&k.context, "context", "", "accepted for uniformity; this command does not contact a cluster")
}

func (k *kubeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "path to a kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)")
	fs.StringVar(&k.context, "context", "", "the kubeconfig context to use (default: the current context)")
}

// logFlags choose the format and level of dynwatch's own logs (always stderr).
type logFlags struct {
	level  string
	format string
}

func (l *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&l.format, "log-format", "text", "log format: text or json")
}

func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, fmt.Errorf("--log-level: want debug, info, warn or error, got %q", l.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(l.format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: want text or json, got %q", l.format)
}

// signalContext returns a context that ends on SIGINT or SIGTERM, and a channel of
// SIGHUPs.
func signalContext(ctx context.Context, e *env) (context.Context, <-chan struct{}, func()) {
	ctx, cancel := context.WithCancel(ctx)
	sigs := e.signals
	var stopNotify func()
	if sigs == nil {
		ch := make(chan os.Signal, 4)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		sigs = ch
		stopNotify = func() { signal.Stop(ch) }
	}
	hup := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-sigs:
				if s == syscall.SIGHUP {
					select {
					case hup <- struct{}{}:
					default:
					}
					continue
				}
				cancel()
				return
			}
		}
	}()
	return ctx, hup, func() {
		cancel()
		<-done
		if stopNotify != nil {
			stopNotify()
		}
	}
}

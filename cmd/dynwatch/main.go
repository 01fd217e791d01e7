// Command dynwatch watches any Kubernetes resource and turns add/update/delete
// events into actions, as a YAML rule file says.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"github.com/dynwatch/dynwatch/reaper"
)

// Exit codes, as docs/cli.md ("Exit codes") lists them.
const (
	exitOK      = 0
	exitFailure = 1 // findings, or a failure at run time
	exitUsage   = 2 // bad usage or an invalid config
	// exitIncomplete: audit could not list some selected resource, or reach
	// the API server or a cluster, and found nothing in the rest.
	exitIncomplete = 3
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
	// As PID 1 without an init (the image is FROM scratch), dynwatch runs as
	// the child of an init of its own, which reaps orphaned processes.
	if code, ok := reaper.Init(); ok {
		os.Exit(code)
	}
	progName = nameFor(os.Args[0])
	os.Exit(cli(context.Background(), &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:]))
}

func cli(ctx context.Context, e *env, args []string) int {
	code := exitOK
	root := newRoot(ctx, e, &code)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		msg := strings.TrimSpace(err.Error())
		if strings.Contains(msg, "shorthand flag: 'v'") {
			msg += " (-v is verbosity, given to a command: " + progName + " tail -v …; the version is --version)"
		}
		fmt.Fprintf(e.stderr, "dynwatch: %s\nRun '%s --help' for usage.\n", msg, progName)
		return exitUsage
	}
	return code
}

// newRoot returns the command tree: dynwatch's commands (each parsing its own
// flags), cobra's help and completion, and what a command's run sets code to.
func newRoot(ctx context.Context, e *env, code *int) *cobra.Command {
	root := &cobra.Command{
		Use:           "dynwatch",
		Short:         "watch any Kubernetes resource and turn its changes into actions",
		Long:          "dynwatch watches any Kubernetes resource — built-in kinds and CRDs — and turns add/update/delete\nevents into actions (JSON log lines, webhooks, Slack and Teams messages, CloudEvents, commands,\nKafka, NATS), as a YAML rule file says.",
		Version:       built().Version,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: progName},
	}
	root.SuggestionsMinimumDistance = 2
	// --version has no -v: -v is verbosity on every command, as with kubectl.
	root.Flags().Bool("version", false, "print dynwatch's version")
	root.SetVersionTemplate("dynwatch {{.Version}}\n")
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	for _, c := range commands() {
		sub := &cobra.Command{
			Use:                c.name,
			Short:              c.short,
			Example:            exampleOf(c.name),
			DisableFlagParsing: true, // each command parses its own flags (pflag: anywhere on the line)
			SilenceErrors:      true,
			SilenceUsage:       true,
			RunE: func(_ *cobra.Command, a []string) error {
				*code = c.run(ctx, e, a)
				return nil
			},
		}
		sub.SetHelpFunc(func(*cobra.Command, []string) { *code = c.run(ctx, e, []string{"--help"}) })
		sub.ValidArgsFunction = completeFor(c.name)
		root.AddCommand(sub)
	}
	guardHelpTopics(root, e, code)
	setExamples(root)
	return root
}

// flagSet returns a flag set (pflag: flags may stand before or after
// arguments) whose help goes to stdout and whose errors the command reports.
func flagSet(e *env, name, synopsis, description string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stdout, "Usage: %s %s %s\n\n%s\n\nExamples:\n%s\n\nFlags:\n", progName, name, synopsis, description, exampleOf(name))
		fs.SetOutput(e.stdout)
		fs.PrintDefaults()
		fs.SetOutput(e.stderr)
	}
	return fs
}

// parse parses args; ok is false when the command should return code at once
// (help was asked for: printed on stdout; or the flags were wrong: the error,
// and one line pointing to --help, on stderr).
func parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(verbosityArgs(fs, args))
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK, false
	case err != nil:
		return usageError(fs, "%v", err), false
	}
	return exitOK, true
}

// usageError reports a usage error of the command of fs: the error first, then
// one line pointing to --help, never the whole usage.
func usageError(fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(fs.Output(), "dynwatch %s: %s\nRun '%s %s --help' for usage.\n", fs.Name(), fmt.Sprintf(format, args...), progName, fs.Name())
	return exitUsage
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

// guardHelpTopics makes `dynwatch help TOPIC` for a topic that names no
// command a usage error (exit 2) with "did you mean", as a misspelt command
// is; cobra's own help command (its completion, its help flags) does the rest.
func guardHelpTopics(root *cobra.Command, e *env, code *int) {
	root.InitDefaultHelpCmd()
	for _, h := range root.Commands() {
		if h.Name() != "help" {
			continue
		}
		show := h.Run
		h.Run = func(c *cobra.Command, args []string) {
			topic, suggestions := unknownTopic(root, args)
			if topic == "" {
				show(c, args)
				return
			}
			msg := fmt.Sprintf("unknown help topic %q", topic)
			if len(suggestions) > 0 {
				msg += fmt.Sprintf("; did you mean %q?", suggestions[0])
			}
			fmt.Fprintf(e.stderr, "dynwatch help: %s\nRun '%s --help' for usage.\n", msg, progName)
			*code = exitUsage
		}
	}
}

// unknownTopic returns the topic of help's args that names no command, with
// the commands it may have meant; "" when they name one.
func unknownTopic(root *cobra.Command, args []string) (string, []string) {
	if len(args) == 0 {
		return "", nil
	}
	cmd, rest, err := root.Find(args)
	switch {
	case err != nil || cmd == root:
		return args[0], root.SuggestionsFor(args[0])
	case len(rest) > 0 && cmd.HasSubCommands():
		// A command of commands, and a word that names none of them:
		// "completion bsh".
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2 // as cobra's own suggestions default
		}
		var out []string
		for _, s := range cmd.SuggestionsFor(rest[0]) {
			out = append(out, cmd.Name()+" "+s)
		}
		return cmd.Name() + " " + rest[0], out
	}
	return "", nil
}

package main

import (
	"context"
	goflag "flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	flag "github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// clientTraceLevel is the -v level from which client-go's own lines (its
// klog verbosity: request URLs at 6, headers at 7, bodies at 8, as kubectl's
// -v) are shown too, at debug level.
const clientTraceLevel = 6

// logFlags choose the format and level of dynwatch's own logs (always stderr).
type logFlags struct {
	level        string
	format       string
	verbosity    int
	verboseLevel string
	fs           *flag.FlagSet
}

// register adds --log-level, with level as its default, and -v/--verbose
// (kubectl's -v=N): -v sets the level to verbose, -v=2 to debug, and from
// -v=6 client-go's lines of that verbosity are shown too; --log-level, when
// given, sets dynwatch's own level whatever -v says.
func (l *logFlags) register(fs *flag.FlagSet, level, verbose string) {
	l.verboseLevel = verbose
	fs.StringVar(&l.level, "log-level", level, "dynwatch's own log level: debug, info, warn or error")
	v := fs.VarPF(verbosityValue{&l.verbosity}, "verbose", "v",
		"-v: more of dynwatch's own logs (--log-level "+verbose+"); -v=2: debug; -v=6 and up: also client-go's requests (7: headers, 8: bodies), as kubectl -v=N")
	v.NoOptDefVal = "1"
	l.fs = fs
	fs.StringVar(&l.format, "log-format", "text", "log format: text or json")
}

// logger builds dynwatch's logger and routes client-go's logs (klog) through
// it, as -v says (routeKlog).
func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	if l.fs == nil || !l.fs.Changed("log-level") {
		switch {
		case l.verbosity >= 2:
			l.level = "debug"
		case l.verbosity == 1:
			l.level = l.verboseLevel
		}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, fmt.Errorf("--log-level: want debug, info, warn or error, got %q", l.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch strings.ToLower(l.format) {
	case "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("--log-format: want text or json, got %q", l.format)
	}
	routeKlogs(h, l.verbosity)
	return slog.New(h), nil
}

// routeKlogs is routeKlog, or nothing where several commands run in one
// process at once (the in-process tests) and klog, being process-wide, would
// send one command's client-go lines to another's stderr.
var routeKlogs = routeKlog

// routeKlog sends client-go's logs through h: its errors, warnings and
// plain lines as they are, its verbose lines (klog's V(n), which would
// read DEBUG+3 and the like) only from -v=6 on, up to n = v, as debug lines.
// klog is process-wide: the last command to start sets it.
func routeKlog(h slog.Handler, verbosity int) {
	maxV := 0
	if verbosity >= clientTraceLevel {
		maxV = verbosity
	}
	var fs goflag.FlagSet
	klog.InitFlags(&fs)
	_ = fs.Set("v", strconv.Itoa(maxV)) // client-go's transport reads it to wrap its requests in traces
	klog.SetSlogLogger(slog.New(klogHandler{h: h, maxV: maxV}))
}

// klogHandler is the handler client-go's lines go through: a V(n) line
// comes as level INFO-n; it passes when n <= maxV, as a DEBUG line.
type klogHandler struct {
	h    slog.Handler
	maxV int
}

func (k klogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	if l < slog.LevelInfo {
		if int(slog.LevelInfo-l) > k.maxV {
			return false
		}
		l = slog.LevelDebug
	}
	return k.h.Enabled(ctx, l)
}

func (k klogHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelInfo {
		r.Level = slog.LevelDebug
	}
	return k.h.Handle(ctx, r)
}

func (k klogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return klogHandler{h: k.h.WithAttrs(as), maxV: k.maxV}
}

func (k klogHandler) WithGroup(name string) slog.Handler {
	return klogHandler{h: k.h.WithGroup(name), maxV: k.maxV}
}

// verbosityArgs spells -v's level as -v=N wherever args give it as kubectl's
// -v takes it (-v6, -v 6, --verbose 6), since -v alone also stands (for 1)
// and pflag would read the 6 as a shorthand flag or an argument. Args after
// -- are left as they are.
func verbosityArgs(fs *flag.FlagSet, args []string) []string {
	if f := fs.Lookup("verbose"); f == nil || f.Value.Type() != (verbosityValue{}).Type() {
		return args
	}
	level := func(s string) bool { _, err := strconv.ParseUint(s, 10, 0); return err == nil }
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case (a == "-v" || a == "--verbose") && i+1 < len(args) && level(args[i+1]):
			out = append(out, "-v="+args[i+1])
			i++
		case strings.HasPrefix(a, "-v") && level(a[2:]):
			out = append(out, "-v="+a[2:])
		default:
			out = append(out, a)
		}
	}
	return out
}

// verbosityValue is -v's value: a level, 1 when given without one.
type verbosityValue struct{ v *int }

func (v verbosityValue) String() string {
	if v.v == nil {
		return "0"
	}
	return strconv.Itoa(*v.v)
}

func (v verbosityValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("want a level, 0 or more (-v, -v=2, -v=6), got %q", s)
	}
	*v.v = n
	return nil
}

func (v verbosityValue) Type() string { return "level" }

// commandLogs registers --log-level, -v/--verbose and --log-format on a command
// whose own logs are few (API server warnings, mostly): warn by default, info
// with -v. Every command takes them, so that -v means one thing everywhere.
func commandLogs(fs *flag.FlagSet) *logFlags {
	lf := &logFlags{}
	lf.register(fs, "warn", "info")
	return lf
}

// apply builds the logger once the flags are parsed and hands it to k, which
// logs API server warnings with it; ok is false, with a usage error reported,
// when a log flag has a bad value.
func (l *logFlags) apply(fs *flag.FlagSet, e *env, k *kubeFlags) (code int, ok bool) {
	log, err := l.logger(e.stderr)
	if err != nil {
		return usageError(fs, "%v", err), false
	}
	k.log = log
	return exitOK, true
}

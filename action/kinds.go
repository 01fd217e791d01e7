package action

import (
	"fmt"
	"io"
	"log/slog"
	"text/template"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/payload"
)

// Env is what building a sender may use of the process.
type Env struct {
	// Stdout is where `log: {}` writes.
	Stdout io.Writer
	// Source is the CloudEvents source: the API server's URL (or the
	// cluster's name). Default: "dynwatch".
	Source string
	// Secrets are the config's ${VAR} values, masked in what a receiver or
	// a command says back before it reaches an error. Default: none.
	Secrets *config.Secrets
	// Logger is where a sender says what it learns of its receiver (a
	// JetStream stream's duplicate window). Default: slog.Default().
	Logger *slog.Logger
}

// source returns the CloudEvents source of env.
func (env Env) source() string {
	if env.Source == "" {
		return "dynwatch"
	}
	return env.Source
}

// logger returns env's logger.
func (env Env) logger() *slog.Logger {
	if env.Logger == nil {
		return slog.Default()
	}
	return env.Logger
}

// Action is one configured action, compiled once at load: its spec, its retry
// policy and what builds its sender.
type Action struct {
	Spec  config.ActionSpec
	Retry Retry
	compiled
}

// compiled is what a kind compiles a spec into: what builds its sender, and
// what renders a delivery as that sender would send it (Render).
type compiled struct {
	build  func(Env) (Sender, io.Closer, error)
	render renderFunc
}

// Build returns the action's sender and, when it holds a resource (a log
// file), what closes it. Payloads reach senders already redacted.
func (a *Action) Build(env Env) (Sender, io.Closer, error) { return a.build(env) }

// kind is one row of the action kind table: the config key, and how a spec of
// that kind compiles (once, at load) into what builds its sender. A new sink is
// a spec type in config, a file here with its Sender, and a row below.
type kind struct {
	name    string
	compile func(*config.ActionSpec) (compiled, *FieldError)
}

var kinds = []kind{
	{"log", compileLog},
	{"webhook", compileWebhook},
	{"exec", compileExec},
	{"kafka", compileKafka},
	{"nats", compileNATS},
}

// FieldError is a problem with one field of an action's spec, relative to the
// action (e.g. "webhook.body").
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Compile compiles a spec that config has validated: its kind's table row, its
// retry policy with defaults, and anything the kind compiles once (a webhook's
// body template).
func Compile(spec config.ActionSpec) (*Action, *FieldError) {
	name := spec.Kind()
	for _, k := range kinds {
		if k.name != name {
			continue
		}
		c, ferr := k.compile(&spec)
		if ferr != nil {
			return nil, ferr
		}
		return &Action{Spec: spec, Retry: retryOf(spec.RetryPolicy()), compiled: c}, nil
	}
	return nil, &FieldError{Err: fmt.Errorf("no action kind %q", name)}
}

func retryOf(rs config.RetrySpec) Retry {
	return Retry{Max: *rs.Max, Initial: rs.InitialBackoff.Std(), MaxBackoff: rs.MaxBackoff.Std()}
}

func compileLog(spec *config.ActionSpec) (compiled, *FieldError) {
	path := spec.Log.Path
	build := func(env Env) (Sender, io.Closer, error) {
		if path == "" {
			return NewLog(env.Stdout), nil, nil
		}
		l, err := OpenLog(path)
		if err != nil {
			return nil, nil, err
		}
		return l, l, nil
	}
	return compiled{build, renderLog(path)}, nil
}

func compileWebhook(spec *config.ActionSpec) (compiled, *FieldError) {
	var body *template.Template
	if spec.Webhook.Body != "" {
		var err error
		parse := payload.ParseTemplate
		if spec.Group != nil {
			parse = payload.ParseGroupTemplate // the body is of the group payload
		}
		if body, err = parse(spec.Webhook.Body); err != nil {
			return compiled{}, &FieldError{Field: "webhook.body", Err: err}
		}
	}
	ws := spec.Webhook
	build := func(env Env) (Sender, io.Closer, error) {
		w, err := NewWebhook(ws, body)
		if err != nil {
			return nil, nil, err
		}
		w.format = webhookFormat(ws, env.source())
		w.secrets = env.Secrets
		return w, w, nil
	}
	return compiled{build, renderWebhook(ws, webhookRequests{method: ws.Method, headers: ws.Headers, body: body})}, nil
}

func compileExec(spec *config.ActionSpec) (compiled, *FieldError) {
	es := spec.Exec
	build := func(env Env) (Sender, io.Closer, error) {
		x := NewExec(es)
		x.secrets = env.Secrets
		return x, nil, nil
	}
	return compiled{build, renderExec(es)}, nil
}

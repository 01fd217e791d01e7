package action

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
)

var errNoCommand = errors.New("exec: no command")

// Exec runs a command per payload: argv as configured, never through a shell,
// the payload as one JSON line on stdin and the event's identity in DYNWATCH_*
// variables. The command's environment is minimal (see commandEnv), never
// dynwatch's own, which holds the secrets of the config's ${VAR}s; what a
// failing command printed reaches the error with those secrets masked.
type Exec struct {
	argv    []string
	timeout time.Duration
	env     []string // without the per-event DYNWATCH_* variables
	secrets *config.Secrets
}

// NewExec builds an exec action from a validated spec; the environment it
// passes on is read from dynwatch's now.
func NewExec(spec *config.ExecSpec) *Exec {
	return &Exec{argv: spec.Command, timeout: spec.Timeout.Std(), env: commandEnv(os.LookupEnv, spec.Env)}
}

// Send runs the command once. A non-zero exit, a failure to start or a timeout is
// an error (retried); on timeout the command's whole process group is killed.
// A zero exit is a success even when a child it left in the background still
// holds its stdout or stderr: what that child writes after the exit is dropped.
func (x *Exec) Send(ctx context.Context, d *event.Delivery) error {
	if len(x.argv) == 0 {
		return &Failure{Err: errNoCommand, Permanent: true}
	}
	ctx, cancel := context.WithTimeout(ctx, x.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, x.argv[0], x.argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// The command's children may hold its pipes open: kill the group.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = time.Second
	cmd.Env = append(slices.Clip(x.env), eventEnv(d)...)
	cmd.Stdin = bytes.NewReader(logLine(d))
	out := tailBuffer{keep: outputTail + x.secrets.Longest()}
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil || cmd.ProcessState != nil && cmd.ProcessState.Success() {
		// The command exited 0, on its own: a kill cannot end it so. A
		// background child may have kept its output open past WaitDelay
		// (exec.ErrWaitDelay: os/exec closed it), and the timeout may have
		// passed during that wait, after the exit: a success all the same.
		return nil
	}
	// A command that ran and failed, or hung, failed on this event: it backs off
	// alone. One that could not start at all fails for every event. One that
	// exited with a status did so on its own, before the timeout killed it,
	// even if the deadline passed while os/exec waited for its child's output.
	exited := cmd.ProcessState != nil && cmd.ProcessState.Exited()
	if ctx.Err() == context.DeadlineExceeded && !exited {
		return &Failure{Err: fmt.Errorf("%s: timed out after %s (process group killed)", x.argv[0], x.timeout), OneEvent: true}
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return &Failure{Err: fmt.Errorf("%s: %w: %s", x.argv[0], err, out.masked(x.secrets)), OneEvent: true}
	}
	return fmt.Errorf("%s: %w", x.argv[0], err)
}

// eventEnv is the event's identity as the command's DYNWATCH_* variables.
func eventEnv(d *event.Delivery) []string {
	p := d.Payload
	eventID := p.ID
	if d.Group != nil {
		eventID = "" // several events (their ids on stdin): see webhookRequests.request
	}
	return []string{
		"DYNWATCH_TYPE=" + string(p.Type),
		"DYNWATCH_RULE=" + p.Rule,
		"DYNWATCH_NAMESPACE=" + p.Namespace,
		"DYNWATCH_NAME=" + p.Name,
		"DYNWATCH_KIND=" + p.Resource.Kind,
		"DYNWATCH_EVENT_ID=" + eventID,
	}
}

// outputTail is how much of a failing command's output its error shows: the
// end, where a failure is usually said.
const outputTail = 2048

// tailBuffer keeps the last keep bytes written to it, for error messages:
// keep is outputTail and the longest secret, so that a secret the first of
// the outputTail bytes cut through is still seen whole and masked.
type tailBuffer struct {
	b    []byte
	keep int
	cut  bool // more was written than b holds
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - t.keep; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
		t.cut = true
	}
	return len(p), nil
}

// masked is the output's last outputTail bytes, with the config's secrets
// (what a ${VAR} expanded to) masked: a command that prints its environment
// or echoes a token must not put it in dynwatch's logs.
func (t *tailBuffer) masked(secrets *config.Secrets) string {
	text := string(t.b)
	if t.cut {
		text = secrets.MaskTail(text)
	} else {
		text = secrets.Mask(text)
	}
	if len(text) > outputTail {
		text = text[len(text)-outputTail:]
	}
	return strings.TrimSpace(text)
}

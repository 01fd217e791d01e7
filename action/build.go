package action

import (
	"io"

	"github.com/dynwatch/dynwatch/rules"
)

// Build returns the sender of one configured action and, when it holds a
// resource (a log file), what closes it. Payloads reach senders already redacted.
func Build(spec rules.ActionSpec, stdout io.Writer) (Sender, io.Closer, error) {
	switch {
	case spec.Webhook != nil:
		w, err := NewWebhook(spec.Webhook)
		return w, nil, err
	case spec.Exec != nil:
		return NewExec(spec.Exec), nil, nil
	case spec.Log != nil && spec.Log.Path != "":
		l, err := OpenLog(spec.Log.Path)
		if err != nil {
			return nil, nil, err
		}
		return l, l, nil
	default:
		return NewLog(stdout), nil, nil
	}
}

// RetryOf returns the retry policy of a configured action; the log action uses
// the default policy.
func RetryOf(spec rules.ActionSpec) Retry {
	rs := &rules.RetrySpec{}
	switch {
	case spec.Webhook != nil && spec.Webhook.Retry != nil:
		rs = spec.Webhook.Retry
	case spec.Exec != nil && spec.Exec.Retry != nil:
		rs = spec.Exec.Retry
	}
	r := Retry{Max: rules.DefaultRetryMax, Initial: rules.DefaultInitialBO, MaxBackoff: rules.DefaultMaxBO}
	if rs.Max != nil {
		r.Max = *rs.Max
	}
	if rs.InitialBackoff != nil {
		r.Initial = rs.InitialBackoff.Std()
	}
	if rs.MaxBackoff != nil {
		r.MaxBackoff = rs.MaxBackoff.Std()
	}
	return r
}

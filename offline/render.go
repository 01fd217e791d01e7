package offline

import (
	"fmt"
	"io"
	"strings"

	"github.com/dynwatch/dynwatch/action"
	"github.com/dynwatch/dynwatch/event"
	"github.com/dynwatch/dynwatch/payload"
)

// renderActions writes, for each action, what its sender would send for the
// payload p of ev (action.Action.Render, the senders' own rendering): where
// to, its headers (or a command's variables), a Kafka record's key and the
// body. A grouping action sends groups: the event is shown as a group of one,
// as the action would send it if no other event joined.
func renderActions(w io.Writer, actions []*action.Action, env action.Env, ev *event.Event, p *event.Payload) error {
	d, err := payload.Delivery(p, ev.ObjectKey())
	if err != nil {
		return err
	}
	for _, a := range actions {
		ad, note := d, ""
		if g := a.Spec.Group; g != nil {
			if ad, err = event.NewGroupDelivery(event.GroupLabels(g.By, p), []*event.Delivery{d}); err != nil {
				return err
			}
			note = " (grouped: this event as a group of one)"
		}
		r, err := a.Render(env, ad)
		if err != nil {
			fmt.Fprintf(w, "--- action %s (%s) cannot render this event: %s\n", a.Spec.Name, a.Spec.Kind(), payload.Printable(err.Error()))
			continue
		}
		fmt.Fprintf(w, "--- action %s (%s)%s: %s\n", a.Spec.Name, a.Spec.Kind(), note, payload.Printable(r.To))
		for _, f := range r.Header {
			fmt.Fprintf(w, "%s: %s\n", payload.Printable(f.Name), payload.Printable(f.Value))
		}
		if a.Spec.Kafka != nil {
			fmt.Fprintf(w, "key: %s\n", payload.Printable(r.Key))
		}
		fmt.Fprintln(w)
		body := r.Body
		if len(body) == 0 || body[len(body)-1] != '\n' {
			body = append(body, '\n')
		}
		if _, err := w.Write(body); err != nil {
			return err
		}
	}
	return nil
}

// terminal writes what test prints as a terminal should see it: each line
// through payload.Printable, so that an object's value (an annotation a
// body template renders, a name) cannot carry an escape sequence the
// terminal would obey; line ends stay. Each of test's writes is whole lines
// or a part of one, never a part of a character.
type terminal struct{ w io.Writer }

func (t terminal) Write(p []byte) (int, error) {
	lines := strings.SplitAfter(string(p), "\n")
	var b strings.Builder
	for _, l := range lines {
		text, end := strings.CutSuffix(l, "\n")
		b.WriteString(payload.Printable(text))
		if end {
			b.WriteByte('\n')
		}
	}
	if _, err := io.WriteString(t.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

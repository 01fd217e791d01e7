package offline

import (
	"fmt"
	"io"

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

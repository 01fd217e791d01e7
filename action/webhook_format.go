package action

import (
	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/event"
)

// bodyFormat renders a delivery as a webhook request's body and the headers
// that describe it (its Content-Type among them). It is chosen once, at load,
// from the webhook's format. The header map is only read: a format may hand
// the same one to every delivery.
type bodyFormat func(d *event.Delivery) (body []byte, header map[string]string, err error)

// webhookFormat returns the format of spec, or nil for the payload JSON as it is.
// source is the CloudEvents source.
func webhookFormat(spec *config.WebhookSpec, source string) bodyFormat {
	switch spec.Format {
	case config.FormatCloudEvents:
		if spec.CloudEvents != nil && spec.CloudEvents.Mode == config.CEBinary {
			return func(d *event.Delivery) ([]byte, map[string]string, error) {
				h := map[string]string{"Content-Type": "application/json"}
				for _, a := range ceAttributes(d, source) {
					h["Ce-"+a.name] = ceHeaderValue(a.value)
				}
				return d.JSON, h, nil
			}
		}
		header := map[string]string{"Content-Type": "application/cloudevents+json"}
		return func(d *event.Delivery) ([]byte, map[string]string, error) {
			return ceStructured(d, source), header, nil
		}
	case config.FormatSlack:
		return chatFormat(slackMessage, renderSlack)
	case config.FormatTeams:
		return chatFormat(teamsMessage, renderTeams)
	}
	return nil
}

// chatFormat sends a chat message as application/json: what build makes of
// one event's payload, or for a grouped delivery what render makes of the
// group's summary.
func chatFormat(build func(*event.Payload) ([]byte, error), render func(string, []chatFact, string) ([]byte, error)) bodyFormat {
	header := map[string]string{"Content-Type": "application/json"}
	return func(d *event.Delivery) ([]byte, map[string]string, error) {
		if d.Group != nil {
			title, facts := groupSummary(d.Group)
			b, err := render(title, facts, DeliveryID(d))
			return b, header, err
		}
		b, err := build(d.Payload)
		return b, header, err
	}
}

package action

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// An object's name reaches a Slack message's text fallback escaped: RBAC
// names may hold any character but '/' and '%', so a Role named <!channel>
// must not mention the channel, nor any other text turn into a link.
func TestSlackTextEscapesObjectName(t *testing.T) {
	t.Parallel()
	srv, got := formatRecorder(t, nil)
	w := buildAction(t, fmt.Sprintf(`webhook: {url: %q, format: slack}`, srv.URL))
	d := cmDelivery("<!channel>&<https://evil.test|click>", 0)
	d.JSON, _ = json.Marshal(d.Payload)
	if err := w.Send(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	var m struct {
		Text   string
		Blocks []struct {
			Type     string
			Fields   []struct{ Type, Text string }
			Elements []struct{ Type, Text string }
		}
	}
	if err := json.Unmarshal(got()[0].body, &m); err != nil {
		t.Fatal(err)
	}
	texts := []string{m.Text}
	for _, b := range m.Blocks {
		for _, f := range append(b.Fields, b.Elements...) {
			if f.Type == "mrkdwn" {
				texts = append(texts, f.Text)
			}
		}
	}
	for _, s := range texts {
		if strings.ContainsAny(s, "<>") || strings.Contains(strings.ReplaceAll(s, "&amp;", ""), "&<") {
			t.Errorf("mrkdwn text carries the object name unescaped: %q", s)
		}
	}
	if !strings.Contains(m.Text, "&lt;!channel&gt;") {
		t.Errorf("text fallback %q does not name the object (escaped)", m.Text)
	}
}

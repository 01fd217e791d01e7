package action

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dynwatch/dynwatch/event"
)

// Chat messages: what a person reads of an event. Each says the rule, the
// event, the object, what changed and, for transitions, whether it opened or
// resolved.

// maxChatPaths caps the changed paths a message lists; the rest are counted.
const maxChatPaths = 20

// chatFacts are the lines of a chat message, in order, as title and value.
type chatFact struct{ title, value string }

// chatSummary is a message's one-line title and its facts.
func chatSummary(p *event.Payload) (string, []chatFact) {
	obj := p.Name
	if p.Namespace != "" {
		obj = p.Namespace + "/" + p.Name
	}
	title := fmt.Sprintf("%s: %s %s %s", p.Rule, p.Type, p.Resource.Kind, obj)
	if s := transitionWord(p.Transition); s != "" {
		title = fmt.Sprintf("%s %s: %s %s", p.Rule, s, p.Resource.Kind, obj)
	}
	facts := []chatFact{
		{"Rule", p.Rule},
		{"Event", string(p.Type)},
		{"Object", strings.TrimSpace(p.Resource.Kind + " " + obj)},
	}
	if s := transitionWord(p.Transition); s != "" {
		facts = append(facts, chatFact{"State", s})
	}
	if len(p.Changed) > 0 {
		facts = append(facts, chatFact{"Changed", changedList(p.Changed)})
	}
	if p.Replay {
		facts = append(facts, chatFact{"Replay", "yes: this changed while dynwatch was not running"})
	}
	return title, facts
}

// transitionWord says a transition as a person reads it.
func transitionWord(t string) string {
	switch t {
	case "enter":
		return "opened"
	case "exit":
		return "resolved"
	}
	return ""
}

func changedList(paths []string) string {
	shown := paths
	if len(shown) > maxChatPaths {
		shown = shown[:maxChatPaths]
	}
	s := strings.Join(shown, ", ")
	if more := len(paths) - len(shown); more > 0 {
		s += fmt.Sprintf(" (and %d more)", more)
	}
	return s
}

// Slack Block Kit: a header block, a section of fields, and text as the
// notification fallback. Block Kit limits: header text 150 characters, a
// field 2000.
type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text,omitempty"`
	Fields   []slackText `json:"fields,omitempty"`
	Elements []slackText `json:"elements,omitempty"`
}

func slackMessage(p *event.Payload) ([]byte, error) {
	title, facts := chatSummary(p)
	return renderSlack(title, facts, DeliveryKey(p))
}

// renderSlack builds a Slack message of a title, its facts and the delivery
// key it ends with.
func renderSlack(title string, facts []chatFact, key string) ([]byte, error) {
	fields := make([]slackText, 0, len(facts))
	for _, f := range facts {
		fields = append(fields, slackText{"mrkdwn", "*" + f.title + "*\n" + clip(slackEscape(f.value), 1900)})
	}
	return json.Marshal(struct {
		Text   string       `json:"text"`
		Blocks []slackBlock `json:"blocks"`
	}{
		Text: slackEscape("dynwatch: " + title), // mrkdwn: a name must not mention or link
		Blocks: []slackBlock{
			{Type: "header", Text: &slackText{"plain_text", clip(title, 150)}},
			{Type: "section", Fields: fields},
			{Type: "context", Elements: []slackText{{"mrkdwn", slackEscape("dynwatch · " + key)}}},
		},
	})
}

// slackEscape escapes the three characters Slack's mrkdwn reserves.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Teams: a Workflows ("When a Teams webhook request is received") message
// with one Adaptive Card.
type teamsMsg struct {
	Type        string            `json:"type"`
	Attachments []teamsAttachment `json:"attachments"`
}

type teamsAttachment struct {
	ContentType string    `json:"contentType"`
	ContentURL  *string   `json:"contentUrl"`
	Content     teamsCard `json:"content"`
}

type teamsCard struct {
	Schema  string `json:"$schema"`
	Type    string `json:"type"`
	Version string `json:"version"`
	Body    []any  `json:"body"`
}

type teamsFact struct {
	Title string `json:"title"`
	Value string `json:"value"`
}

func teamsMessage(p *event.Payload) ([]byte, error) {
	title, facts := chatSummary(p)
	return renderTeams(title, facts, DeliveryKey(p))
}

// renderTeams builds a Teams message of a title, its facts and the delivery
// key it ends with.
func renderTeams(title string, facts []chatFact, key string) ([]byte, error) {
	tf := make([]teamsFact, len(facts))
	for i, f := range facts {
		tf[i] = teamsFact{f.title, f.value}
	}
	card := teamsCard{
		Schema:  "http://adaptivecards.io/schemas/adaptive-card.json",
		Type:    "AdaptiveCard",
		Version: "1.4",
		Body: []any{
			map[string]any{"type": "TextBlock", "text": title, "weight": "Bolder", "size": "Medium", "wrap": true},
			map[string]any{"type": "FactSet", "facts": tf},
			map[string]any{"type": "TextBlock", "text": "dynwatch · " + key, "isSubtle": true, "size": "Small", "wrap": true},
		},
	}
	return json.Marshal(teamsMsg{
		Type:        "message",
		Attachments: []teamsAttachment{{ContentType: "application/vnd.microsoft.card.adaptive", Content: card}},
	})
}

package plan

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every config in the README's Sinks section loads: its schema, its templates
// and its action kinds.
func TestReadmeSinkExamples(t *testing.T) {
	for k, v := range map[string]string{"KAFKA_USER": "u", "KAFKA_PASSWORD": "p", "NATS_TOKEN": "t",
		"SLACK_WEBHOOK_URL": "https://hooks.example.invalid/services/T/B/X", "TEAMS_WORKFLOW_URL": "https://teams.example.invalid/workflows/x"} {
		t.Setenv(k, v)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "## Sinks")
	if start < 0 {
		t.Fatal("README has no Sinks section")
	}
	section := text[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(section, -1)
	if len(blocks) < 4 {
		t.Fatalf("the Sinks section has %d yaml examples, want one per sink", len(blocks))
	}
	for _, b := range blocks {
		f, err := Parse("README.md", []byte(b[1]))
		if err != nil {
			t.Errorf("example does not load: %v\n%s", err, b[1])
			continue
		}
		if len(f.Actions) != len(f.Config.Actions) {
			t.Errorf("compiled %d of %d actions", len(f.Actions), len(f.Config.Actions))
		}
	}
}

// The README's Several clusters example loads.
func TestReadmeClustersExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "## Several clusters")
	if start < 0 {
		t.Fatal("README has no Several clusters section")
	}
	b := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(text[start:])
	if b == nil {
		t.Fatal("the Several clusters section has no yaml example")
	}
	f, err := Parse("README.md", []byte(b[1]))
	if err != nil {
		t.Fatalf("example does not load: %v\n%s", err, b[1])
	}
	if got := len(f.ForCluster("west").Rules); got != 2 {
		t.Errorf("west has %d rules, want 2", got)
	}
	if got := len(f.ForCluster("east").Rules); got != 1 {
		t.Errorf("east has %d rules, want 1", got)
	}
}

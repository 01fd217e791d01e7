package plan

import "testing"

// Every config of the Sinks page (docs/sinks.md) loads: its schema, its
// templates and its action kinds.
func TestDocsSinkExamples(t *testing.T) {
	for k, v := range map[string]string{"KAFKA_USER": "u", "KAFKA_PASSWORD": "p", "NATS_TOKEN": "t",
		"SLACK_WEBHOOK_URL": "https://hooks.example.invalid/services/T/B/X", "TEAMS_WORKFLOW_URL": "https://teams.example.invalid/workflows/x",
		"HOOK_PATH": "p", "HOOK_TOKEN": "t", "NOTIFY_TOKEN": "n"} {
		t.Setenv(k, v)
	}
	blocks, _ := docBlocks(t, "sinks.md")
	if len(blocks) < 7 {
		t.Fatalf("the Sinks page has %d yaml examples, want one per sink (log, webhook, CloudEvents, Slack and Teams, exec, Kafka, NATS)", len(blocks))
	}
	for _, b := range blocks {
		f, err := Parse("docs/sinks.md", []byte(b))
		if err != nil {
			t.Errorf("example does not load: %v\n%s", err, b)
			continue
		}
		if len(f.Actions) != len(f.Config.Actions) {
			t.Errorf("compiled %d of %d actions", len(f.Actions), len(f.Config.Actions))
		}
	}
}

// The example of the Several clusters page (docs/clusters.md) loads.
func TestDocsClustersExample(t *testing.T) {
	blocks, _ := docBlocks(t, "clusters.md")
	if len(blocks) == 0 {
		t.Fatal("the Several clusters page has no yaml example")
	}
	f, err := Parse("docs/clusters.md", []byte(blocks[0]))
	if err != nil {
		t.Fatalf("example does not load: %v\n%s", err, blocks[0])
	}
	if got := len(f.ForCluster("west").Rules); got != 2 {
		t.Errorf("west has %d rules, want 2", got)
	}
	if got := len(f.ForCluster("east").Rules); got != 1 {
		t.Errorf("east has %d rules, want 1", got)
	}
}

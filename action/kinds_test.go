package action

import (
	"slices"
	"testing"

	"github.com/dynwatch/dynwatch/config"
)

// Every action kind the config schema has is a row of the kind table, and the
// other way round.
func TestEveryConfigKindHasARow(t *testing.T) {
	all := config.ActionSpec{Log: &config.LogSpec{}, Webhook: &config.WebhookSpec{}, Exec: &config.ExecSpec{},
		Kafka: &config.KafkaSpec{}, NATS: &config.NATSSpec{}}
	if got, want := all.Kinds(), KindNames(); !slices.Equal(got, want) {
		t.Fatalf("config kinds %v, action table %v", got, want)
	}
}

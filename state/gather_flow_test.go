package state

import (
	"math/rand/v2"
	"testing"
	"time"
)

// At 100 updates a second, a steady flow and no burst, Gather holds (nearly)
// none of them: each is committed as soon as the one before it landed, and
// the latency with state stays the fsync's. The flow's gaps are exponential,
// as independent objects' updates come, not a metronome's.
func TestGatherLeavesASteadyFlowAlone(t *testing.T) {
	const gather, n, rate = 10 * time.Millisecond, 300, 100.0
	c := NewCommitter(nil, CommitterOptions{Gather: gather})
	rng := rand.New(rand.NewPCG(3, 4))
	held := 0
	for range n {
		if !c.gather().IsZero() {
			held++
		}
		time.Sleep(time.Duration(rng.ExpFloat64() * float64(time.Second) / rate))
	}
	t.Logf("at %.0f/s, Gather %s held %d of %d changes", rate, gather, held, n)
	if held > n/20 {
		t.Errorf("at %.0f/s, Gather %s held %d of %d changes (each up to %s): a steady flow is taken for a burst", rate, gather, held, n, gather)
	}
}

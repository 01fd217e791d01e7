package action

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A reload that changes a kafka action builds a new client and hands it the
// backlog (Queue.HandOff). The old client may still have records in flight:
// an attempt that timed out leaves its record with the client, which retries
// it, and a request already sent may be answered late. The broker orders
// records of one partition as they come, whatever client sends them, so a
// record of the new client could land before an object's older record of the
// old one. The new producer therefore inherits the old one's unsettled
// records (Heir): a record of the same topic and key waits until the old one
// is acknowledged or known failed, and a retry of the same delivery takes the
// old record's outcome instead of producing it again. Other objects do not
// wait. The old client stays open, producing what it has, until its records
// are settled or the last producer of the action closes (shutdown).

// handover is what a kafka producer keeps for the hand-over to a successor
// and from its predecessors; Kafka.mu guards it.
type handover struct {
	// earlier are the predecessors whose clients still have records in
	// flight; this producer closes them (release) when it closes, unless a
	// successor took them over.
	earlier []*Kafka
	// handedOver is set once a successor inherited this producer; drained is
	// closed then, once inflight is empty.
	handedOver bool
	drained    chan struct{}
	// release lets Close of a handed-over producer close its client with
	// records still in flight: the last holder has closed.
	release  chan struct{}
	released bool
}

var _ Heir = (*Kafka)(nil)

// partitionKey names the partition a record goes to: its topic and key (the
// partitioner hashes the key).
func partitionKey(rec *kgo.Record) string {
	return rec.Topic + "\x00" + string(rec.Key)
}

// Inherit takes over prev's records not yet settled, when prev is a kafka
// producer of the same cluster (sameCluster): their deliveries' retries wait for them, and so does every
// record of the same topic and key; prev's client stays open until they are
// settled or this producer (or its own successor) closes.
func (k *Kafka) Inherit(prev Sender) {
	p, ok := prev.(*Kafka)
	if !ok || p == k || !sameCluster(p.brokers, k.brokers) {
		return
	}
	p.mu.Lock()
	pending := make(map[string]*pending, len(p.pending))
	for id, pe := range p.pending {
		pending[id] = pe
	}
	earlier := p.earlier
	if len(p.inflight) > 0 {
		earlier = append(earlier, p)
	}
	p.earlier, p.handedOver, p.drained = nil, true, make(chan struct{})
	if len(p.inflight) == 0 {
		close(p.drained)
	}
	p.mu.Unlock()
	k.mu.Lock()
	for id, pe := range pending {
		if _, ok := k.pending[id]; !ok {
			k.pending[id] = pe
		}
	}
	k.earlier = append(k.earlier, earlier...)
	k.mu.Unlock()
}

// sameCluster reports whether two producers' seed brokers name one cluster:
// they share a broker. Records of two clusters never meet on a partition,
// and a successor of other brokers (a fail-over) must not wait for a cluster
// that may never answer again: the old client is closed as the reload's
// queue stops, and the new one produces the backlog from its start.
func sameCluster(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// earlierRecordLocked returns a record with partition key part that a
// predecessor's client has not settled, or nil; it forgets the predecessors
// whose records are all settled. k.mu is held.
func (k *Kafka) earlierRecordLocked(part string) *pending {
	var found *pending
	kept := k.earlier[:0]
	for _, e := range k.earlier {
		e.mu.Lock()
		if len(e.inflight) > 0 {
			kept = append(kept, e)
			if list := e.inflight[part]; found == nil && len(list) > 0 {
				found = list[len(list)-1]
			}
		}
		e.mu.Unlock()
	}
	clear(k.earlier[len(kept):])
	k.earlier = kept
	return found
}

// settle notes that p's record is acknowledged or failed.
func (k *Kafka) settle(p *pending) {
	k.mu.Lock()
	defer k.mu.Unlock()
	list := k.inflight[p.part]
	for i, q := range list {
		if q == p {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(k.inflight, p.part)
	} else {
		k.inflight[p.part] = list
	}
	if k.handedOver && len(k.inflight) == 0 {
		select {
		case <-k.drained:
		default:
			close(k.drained)
		}
	}
}

// Close closes the client: at once, failing what it still has, unless a
// successor inherited this producer, which waits for its records; then once
// they are settled, or once the last producer of the action closes. The
// predecessors this producer still holds are released.
func (k *Kafka) Close() error {
	k.mu.Lock()
	earlier, handedOver, drained := k.earlier, k.handedOver, k.drained
	k.earlier = nil
	k.mu.Unlock()
	for _, e := range earlier {
		e.releaseClient()
	}
	if handedOver {
		select {
		case <-drained:
		case <-k.release:
		}
	}
	k.stop()
	k.client.Close()
	return nil
}

// releaseClient lets k's Close close its client now, records in flight or not.
func (k *Kafka) releaseClient() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.released {
		k.released = true
		close(k.release)
	}
}

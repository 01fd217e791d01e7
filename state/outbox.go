package state

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Each action has an outbox: its durable queue, in the file. A delivery is
// enqueued in the transaction that advances its object's record, read back
// in order (PendingAfter) and removed once it is done with (Done).

// Pending is a delivery that was accepted and not yet delivered.
type Pending struct {
	Seq  uint64          `json:"-"`
	Key  string          `json:"key"`
	JSON json.RawMessage `json:"payload"`
}

// Enqueue appends a delivery to action's durable queue and returns its sequence
// number, which orders it after every earlier one.
func (t *Tx) Enqueue(action, key string, payload []byte) (uint64, error) {
	b, err := t.tx.Bucket(bucketQueues).CreateBucketIfNotExists([]byte(action))
	if err != nil {
		return 0, err
	}
	seq, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	return seq, b.Put(seqKey(seq), pendingJSON(key, payload))
}

// pendingJSON is json.Marshal(Pending{Key: key, JSON: payload}) for a payload
// that is compact JSON already (payload.Delivery's): appended as it is, not
// scanned again.
func pendingJSON(key string, payload []byte) []byte {
	k, _ := json.Marshal(key) // a string always encodes
	v := make([]byte, 0, len(k)+len(payload)+20)
	v = append(append(append(v, `{"key":`...), k...), `,"payload":`...)
	return append(append(v, payload...), '}')
}

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// Done removes delivered (or given up) deliveries from action's queue.
func (s *Store) Done(action string, seqs ...uint64) error {
	return s.Update(func(tx *Tx) error { return tx.Done(action, seqs...) })
}

// Done removes delivered (or given up) deliveries from action's queue.
func (t *Tx) Done(action string, seqs ...uint64) error {
	b := t.tx.Bucket(bucketQueues).Bucket([]byte(action))
	if b == nil {
		return nil
	}
	for _, seq := range seqs {
		if err := b.Delete(seqKey(seq)); err != nil {
			return err
		}
	}
	return nil
}

// PendingAfter returns up to limit of action's undelivered deliveries whose
// sequence number is above after, in order.
func (s *Store) PendingAfter(action string, after uint64, limit int) ([]Pending, error) {
	var out []Pending
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketQueues).Bucket([]byte(action))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(seqKey(after + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			var p Pending
			if err := json.Unmarshal(v, &p); err != nil {
				return fmt.Errorf("pending delivery %d of %s: %w", binary.BigEndian.Uint64(k), action, err)
			}
			p.Seq = binary.BigEndian.Uint64(k)
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// PendingActions returns the actions that have undelivered deliveries, and how many.
func (s *Store) PendingActions() (map[string]int, error) {
	out := map[string]int{}
	err := s.db.View(func(tx *bolt.Tx) error {
		q := tx.Bucket(bucketQueues)
		return q.ForEachBucket(func(name []byte) error {
			if n := q.Bucket(name).Stats().KeyN; n > 0 {
				out[string(name)] = n
			}
			return nil
		})
	})
	return out, err
}

// DropQueue discards action's durable queue and returns how many undelivered
// deliveries it held: for an action the config no longer has when dynwatch
// starts.
func (s *Store) DropQueue(action string) (int, error) {
	n := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		q := tx.Bucket(bucketQueues)
		if b := q.Bucket([]byte(action)); b != nil {
			n = b.Stats().KeyN
		}
		err := q.DeleteBucket([]byte(action))
		if errors.Is(err, bolt.ErrBucketNotFound) {
			return nil
		}
		return err
	})
	return n, err
}

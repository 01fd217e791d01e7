package state

import (
	"errors"

	bolt "go.etcd.io/bbolt"
)

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

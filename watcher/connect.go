package watcher

import (
	"context"
	"fmt"
	"time"
)

// connectSource builds the clients of a pending source (one whose
// kubeconfig could not be read or used) until that works or ctx ends (then
// false): the cluster is reported as not reached (WARN at once, then at
// most every minute; /readyz and dynwatch_cluster_up say it is down) and
// tried again with backoff, as an API server that does not answer is.
func (w *Watcher) connectSource(ctx context.Context, s *source) bool {
	start, warned := time.Now(), time.Time{}
	delay := 500 * time.Millisecond
	for {
		fp := w.fingerprint(s.spec)
		client, disc, err := s.connect()
		if err == nil {
			w.mu.Lock()
			s.fingerprint = fp
			s.attach(client, disc)
			w.mu.Unlock()
			if !warned.IsZero() {
				s.log.Info("cluster's clients built", "after", time.Since(start).Round(time.Second).String())
			}
			return true
		}
		err = fmt.Errorf("its clients cannot be built: %w", err)
		s.reach.set(err)
		if time.Since(warned) >= time.Minute {
			warned = time.Now()
			s.log.Warn(s.unreachable()+"; retrying", "for", time.Since(start).Round(time.Second).String(), "err", err)
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(delay):
		}
		delay = min(2*delay, 15*time.Second)
	}
}

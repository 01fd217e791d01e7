package dyninformer

import apierrors "k8s.io/apimachinery/pkg/api/errors"

// watchRecovered ends an outage of e's watch (the API server accepted a watch
// again): the next failure, even for the same reason, is a new one and is
// reported as such.
func (m *Manager) watchRecovered(e *entry) {
	e.mu.Lock()
	was := e.lastErr
	e.lastErr = ""
	e.mu.Unlock()
	if was != "" {
		m.log.Info("watching resource again", "resource", e.watch.Key().String(), "after", was)
	}
}

// watchError reports a failing watch once per distinct reason and outage, not
// once per retry.
func (m *Manager) watchError(e *entry, err error) {
	reason := string(apierrors.ReasonForError(err))
	if reason == "" {
		reason = err.Error()
	}
	e.mu.Lock()
	e.watchErr = err
	repeat := e.lastErr == reason
	e.lastErr = reason
	e.mu.Unlock()
	if repeat {
		m.log.Debug("watch failed again", "resource", e.watch.Key().String(), "err", err)
		return
	}
	m.log.Warn("cannot watch resource; retrying with backoff", "resource", e.watch.Key().String(), "reason", reason, "err", err)
}

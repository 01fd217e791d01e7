package dyninformer

import apierrors "k8s.io/apimachinery/pkg/api/errors"

// watchError reports a failing watch once per distinct reason, not once per retry.
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

package watcher

import (
	"crypto/sha256"
	"encoding/hex"
	"os"

	"github.com/dynwatch/dynwatch/config"
)

// fingerprint hashes what a named cluster's clients are built from
// (Options.Fingerprint; by default, the contents of its kubeconfig file):
// when it changes (a rotated token or certificate, a new server address),
// the cluster's source is built again. "" for the one cluster, whose
// clients are the command line's, and for a file that cannot be read.
func (w *Watcher) fingerprint(spec config.ClusterSpec) string {
	if spec.Name == "" {
		return ""
	}
	if w.opts.Fingerprint != nil {
		return w.opts.Fingerprint(spec)
	}
	return FileFingerprint(spec.Kubeconfig)
}

// FileFingerprint hashes the contents of the files at paths, in order
// (those that cannot be read count as empty); "" without paths.
func FileFingerprint(paths ...string) string {
	if len(paths) == 0 || len(paths) == 1 && paths[0] == "" {
		return ""
	}
	h := sha256.New()
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		h.Write([]byte(p))
		h.Write([]byte{0})
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// rotated reports whether s's kubeconfig changed since s was built.
func (w *Watcher) rotated(s *source) bool {
	return s.name != "" && w.fingerprint(s.spec) != s.fingerprint
}

// rebuildRotated builds again the sources whose kubeconfig changed, as a
// reload does (see reconcileClustersLocked); for the discovery refresh,
// which runs inside a source and so cannot wait for it to stop.
func (w *Watcher) rebuildRotated() {
	w.mu.Lock()
	if w.run == nil {
		w.mu.Unlock()
		return // stopping
	}
	gone := w.reconcileClustersLocked(w.File())
	w.mu.Unlock()
	stopRemoved(gone)
}

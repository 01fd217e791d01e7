package watcher

import (
	"context"
	"errors"
	"fmt"
	"slices"

	k8sdiscovery "k8s.io/client-go/discovery"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/plan"
)

// clustersOf returns the clusters of file: its clusters, or, without them,
// the one cluster of the command line (a spec with no name).
func clustersOf(file *plan.File) []config.ClusterSpec {
	if len(file.Config.Clusters) == 0 {
		return []config.ClusterSpec{{}}
	}
	return file.Config.Clusters
}

// newSource builds the source of the cluster spec names: the command line's
// clients for the one cluster, Options.Connect's for a named one. Each has
// its own clients, so its own rate limits. A named cluster whose clients
// cannot be built (kubeconfig missing, bad context, unparsable) is a
// cluster that cannot be reached: its source is pending, and runSource
// tries again with backoff.
func (w *Watcher) newSource(file *plan.File, spec config.ClusterSpec) *source {
	opts := sourceOptions{
		name:    spec.Name,
		resync:  file.Config.Defaults.Resync.Std(),
		refresh: w.opts.DiscoveryRefresh,
		log:     w.log,
	}
	if spec.Name == "" {
		s := newSource(w.client, w.disc, w.handle, opts)
		s.spec = spec
		return s
	}
	connect := func() (*dyninformer.Client, k8sdiscovery.DiscoveryInterface, error) {
		if w.opts.Connect == nil {
			return nil, nil, errors.New("no way to connect to a named cluster")
		}
		return w.opts.Connect(spec)
	}
	fp := w.fingerprint(spec) // before the clients: a change meanwhile builds them again
	client, disc, err := connect()
	if err != nil {
		client, disc = nil, nil
	}
	s := newSource(client, disc, w.handle, opts)
	s.spec, s.connect, s.fingerprint = spec, connect, fp
	if err != nil {
		s.reach.set(fmt.Errorf("its clients cannot be built: %w", err))
	}
	return s
}

// sources returns the clusters' sources.
func (w *Watcher) sources() []*source {
	w.srcMu.RLock()
	defer w.srcMu.RUnlock()
	return slices.Clone(w.srcs)
}

// hasSourceLocked reports whether s is still one of the watcher's sources;
// w.mu is held.
func (w *Watcher) hasSourceLocked(s *source) bool { return slices.Contains(w.srcs, s) }

// keySynced is the KeySynced of the manager of k's cluster.
func (w *Watcher) keySynced(k dyninformer.Key) (synced, watched bool) {
	for _, s := range w.sources() {
		if s.name == k.Cluster && s.connected.Load() {
			return s.mgr.KeySynced(k)
		}
	}
	return false, false
}

// runSources runs every source (and those a reload adds) until ctx is done
// or one fails, and returns once all of them have ended, with the first
// error.
func (w *Watcher) runSources(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w.mu.Lock()
	w.run = ctx
	for _, s := range w.srcs {
		w.startSourceLocked(s)
	}
	w.mu.Unlock()
	var err error
	select {
	case <-ctx.Done():
	case err = <-w.srcErr:
	}
	cancel()
	w.mu.Lock()
	w.run = nil // a reload from now on starts no source
	w.mu.Unlock()
	w.srcWG.Wait()
	return err
}

// startSourceLocked starts s in the watcher's run; w.mu is held.
func (w *Watcher) startSourceLocked(s *source) {
	ctx, stop := context.WithCancel(w.run)
	s.stop = stop
	w.srcWG.Go(func() {
		defer close(s.done)
		if err := w.runSource(ctx, s); err != nil {
			select {
			case w.srcErr <- err:
			default:
			}
		}
	})
}

// runSource reads the cluster's discovery until it answers (an unreachable
// cluster is reported and retried with backoff, the others go on), then
// watches what the config's rules for the cluster select, until ctx ends.
// With state, a cluster reached late compares its first lists with its
// records, as at a restart: what changed while it was away is replayed.
func (w *Watcher) runSource(ctx context.Context, s *source) error {
	if !s.connected.Load() && !w.connectSource(ctx, s) {
		return nil // stopped before its clients could be built
	}
	cat := s.firstCatalog(ctx)
	if cat == nil {
		return nil // stopped before the cluster could be reached
	}
	w.mu.Lock()
	if !w.hasSourceLocked(s) {
		w.mu.Unlock()
		return nil
	}
	w.health.reportFailed(s, cat, nil)
	w.applyLocked(s, change{file: w.File(), cat: cat, lists: dyninformer.ListsKnown})
	s.applied.Store(true)
	w.mu.Unlock()
	return s.run(ctx, func() { w.refresh(s) })
}

// reconcileClustersLocked makes the sources match file's clusters: a
// cluster the file adds gets a source (started when the watcher runs), one
// it removes (or whose kubeconfig or context changed, or whose kubeconfig's
// contents did: see fingerprint) leaves the pipeline; a changed one comes
// back as an added one.
// The others' sources, informers included, are not touched. It returns the
// sources to stop once w.mu is released (stopRemoved). w.mu is held.
func (w *Watcher) reconcileClustersLocked(file *plan.File) []*source {
	want := clustersOf(file)
	var keep, gone []*source
	for _, s := range w.srcs {
		if slices.Contains(want, s.spec) && !w.rotated(s) {
			keep = append(keep, s)
		} else {
			gone = append(gone, s)
		}
	}
	var added []*source
	for _, spec := range want {
		if slices.ContainsFunc(keep, func(s *source) bool { return s.spec == spec }) {
			continue
		}
		added = append(added, w.newSource(file, spec))
	}
	if len(gone) == 0 && len(added) == 0 {
		return nil
	}
	p := w.pipe.Load()
	for _, s := range gone {
		p = p.withoutCluster(s.name)
		if slices.Contains(want, s.spec) {
			s.log.Info("cluster's kubeconfig changed: its clients are built again and its watches start again (with state, compared with its records)")
		} else {
			s.log.Info("cluster removed from the config: its watches stop (its records stay in the state file)")
		}
	}
	w.pipe.Store(p)
	next := append(keep, added...)
	w.srcMu.Lock()
	w.srcs = next
	w.srcMu.Unlock()
	for _, s := range added {
		s.log.Info("cluster added to the config: watching it")
		if w.run != nil {
			w.startSourceLocked(s)
		}
	}
	return gone
}

// stopRemoved stops the sources a reload removed and waits until they have
// ended; w.mu is not held (a source that stops may be waiting for it).
func stopRemoved(gone []*source) {
	for _, s := range gone {
		if s.stop == nil {
			continue // never started
		}
		s.stop()
		<-s.done
	}
}

// ClusterStatus is whether one named cluster answers.
type ClusterStatus struct {
	Name string
	// Up is true once the cluster's discovery answered, and while its last
	// read did.
	Up bool
	// Err is why it is not up.
	Err error
}

// Clusters returns each named cluster's status, in config order; nil
// without clusters. For /readyz and dynwatch_cluster_up.
func (w *Watcher) Clusters() []ClusterStatus {
	var out []ClusterStatus
	for _, s := range w.sources() {
		if s.name == "" {
			continue
		}
		up, err := s.reach.get()
		out = append(out, ClusterStatus{Name: s.name, Up: up, Err: err})
	}
	return out
}

// Package daemon owns the life of `dynwatch run`: the operations server
// (/metrics, /healthz, /readyz), leader election, and, while this replica acts,
// the restart state, the watcher and following the config file.
//
// It may import every package below it; nothing imports it but cmd/dynwatch.
package daemon

import (
	"context"
	"errors"
	"github.com/dynwatch/dynwatch/internal/memory"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	k8sdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/metrics"
	"github.com/dynwatch/dynwatch/plan"
	"github.com/dynwatch/dynwatch/state"
	"github.com/dynwatch/dynwatch/watcher"
)

// Options configure a daemon run.
type Options struct {
	// File is the loaded config; File.Path is followed for changes.
	File *plan.File
	// ConfigCheckInterval is how often the config file is checked for changes.
	// Default: 2s.
	ConfigCheckInterval time.Duration
	// ResetState discards the state file of state.path before opening it.
	ResetState bool
	// Informers lists and watches for the informers, Discovery follows the
	// served resources; Kube is needed for leader election (Leases).
	Informers *dyninformer.Client
	Discovery k8sdiscovery.DiscoveryInterface
	Kube      kubernetes.Interface
	// Logger receives dynwatch's own logs. Default: slog.Default().
	Logger *slog.Logger
	// Stdout is where `log: {}` actions write. Default: os.Stdout.
	Stdout io.Writer
	// Source is what CloudEvents name as their source: the API server's URL.
	Source string
	// Hup delivers a reload request (SIGHUP); nil: none.
	Hup <-chan struct{}
	// Connect builds the clients of a named cluster of the config's
	// clusters; Informers, Discovery and Kube stay the command line's
	// cluster's, where the Lease lives.
	Connect func(config.ClusterSpec) (*dyninformer.Client, k8sdiscovery.DiscoveryInterface, error)
	// Fingerprint hashes what Connect builds a cluster's clients from: a
	// change builds them again (see watcher.Options.Fingerprint).
	Fingerprint func(config.ClusterSpec) string
	// Identity names this replica in leader election. Default: $POD_NAME, or
	// the host name and process id.
	Identity string
	// Build is the binary's version and commit, for dynwatch_build_info.
	Build metrics.Build
}

// ErrFailed is returned when the daemon could not start or stopped on an
// error; what went wrong has been logged.
var ErrFailed = errors.New("dynwatch failed")

// errLeaseEnded: the lease ended before this replica could act.
var errLeaseEnded = errors.New("the lease ended")

// daemon is one run: what the server reports and what acts.
type daemon struct {
	o       Options
	log     *slog.Logger
	metrics *metrics.Metrics
	start   time.Time
	// current is the watcher while this replica acts, nil otherwise.
	current atomic.Pointer[watcher.Watcher]
	acting  atomic.Bool
	// opening is true while a replica that leads brings its state file to
	// its shard (openState: after a reshard, it may wait for other shards).
	opening atomic.Bool
	// shard is this process's shard (shard.go); everything without shards.
	shard dyninformer.Shard
	// ownLease is this shard's Lease as elect first read it, before this
	// process wrote it (nil: none), for shardmove.go.
	ownLease *coordinationv1.Lease
	// join is this shard's Lease lock (shardjoin.go; nil without shards or
	// leader election).
	join *joinLock
	// marks are what this term's file publishes on the Lease (JSON of
	// state.Store.Marks; nil: none yet), and prevMarks what the holder of
	// this shard's previous spec published, kept on it (shardmarks.go).
	marks        atomic.Pointer[string]
	prevMarks    string
	marksTooMany bool
	// listedScopes is this term's watches' first lists (annListed).
	listedScopes atomic.Pointer[string]
	// settleWait, when set (by tests), is awaitListed's bound instead of
	// settleWait.
	settleWait time.Duration

	mu   sync.Mutex
	file *plan.File // the last valid config, for the next term
}

// Run runs the daemon until ctx is done, then stops the watches, drains the
// action queues for the shutdown grace period (or, with state and leader
// election, leaves them on disk for the next leader), and returns after
// everything it started has stopped.
func Run(ctx context.Context, o Options) error {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.ConfigCheckInterval <= 0 {
		o.ConfigCheckInterval = 2 * time.Second
	}
	d := &daemon{o: o, log: o.Logger, file: o.File, start: time.Now()}
	d.metrics = metrics.New(metrics.Sources{Queues: d.queueSamples, Watches: d.watchSamples, RuleErrors: d.ruleErrors, Timed: d.timedCounts, Clusters: d.clusterSamples,
		ClusterLabel: len(o.File.Config.Clusters) > 0, Build: o.Build})
	if err := d.setShard(); err != nil {
		d.log.Error("cannot start", "err", err)
		return ErrFailed
	}
	stopServer, err := d.serve()
	if err != nil {
		d.log.Error("cannot serve metrics and health", "err", err)
		return ErrFailed
	}
	defer stopServer()
	d.log.Info("dynwatch started", "config", o.File.Path, "rules", len(o.File.Rules), "actions", len(o.File.Config.Actions))
	if o.File.Config.LeaderElection != nil {
		err = d.elect(ctx)
	} else {
		err = d.act(ctx, nil)
	}
	if err != nil {
		return err
	}
	d.log.Info("dynwatch stopped")
	return nil
}

// act runs the watcher until ctx (shutdown) or lease (leadership; nil without
// leader election) ends. Losing the lease stops delivery at once; a shutdown
// drains the queues, unless events are on disk and another replica may take
// over (then they are left for it).
func (d *daemon) act(ctx context.Context, lease context.Context) error {
	file := d.config()
	d.opening.Store(true)
	store, err := d.openState(file, openContext(ctx, lease))
	d.opening.Store(false)
	if err != nil {
		return err
	}
	if store != nil {
		defer closeState(store)
	}
	synced := memory.DuringSync(d.log)
	defer synced()
	listedCh := make(chan struct{})
	var listedOnce sync.Once
	listed := func() { // the Lease says so (settleMovedAway), and its marks
		synced()
		if w := d.current.Load(); w != nil && d.o.File.Config.Shards != nil {
			d.noteListedScopes(firstLists(store, w.Listed(), d.log))
		}
		d.listed()
		listedOnce.Do(func() { close(listedCh) })
	}
	w, err := watcher.New(file, d.o.Informers, d.o.Discovery, watcher.Options{Logger: d.log, Stdout: d.o.Stdout, Source: d.o.Source, Store: store, Metrics: d.metrics, Connect: d.o.Connect, Fingerprint: d.o.Fingerprint, Synced: listed})
	if err != nil {
		d.log.Error("cannot build actions", "err", err)
		return ErrFailed
	}
	d.current.Store(w)
	d.acting.Store(true)
	d.metrics.SetLeader(true)
	defer func() {
		d.metrics.SetLeader(false)
		d.acting.Store(false)
		d.current.Store(nil)
	}()
	wctx, stop := context.WithCancel(context.Background())
	defer stop()
	go d.watchEnd(ctx, lease, wctx, w, store != nil, stop)
	marked := make(chan struct{})
	if lease != nil && store != nil {
		go func() { defer close(marked); d.publishMarks(wctx, store, listedCh) }()
	} else {
		close(marked)
	}
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		w.FollowConfig(wctx, file.Path, d.o.ConfigCheckInterval, d.o.Hup)
	}()
	err = w.Run(wctx)
	stop()
	<-followed
	<-marked
	if lease != nil && store != nil {
		select {
		case <-listedCh: // the last marks, which releasing the Lease writes
			d.noteMarks(store)
		default:
		}
	}
	d.remember(w.File())
	switch {
	case err == nil:
	case errors.Is(err, watcher.ErrUndelivered) && lease != nil && lease.Err() != nil && ctx.Err() == nil:
		// Halted by the lost Lease: without state.path what was queued is
		// gone (each event was logged by id); with it, what the file
		// refused at the halt is replayed by the next leader's comparison
		// with the records. This replica stands by again like any other.
		d.log.Warn("lost the lease with events neither delivered nor kept on disk", "err", err)
	default:
		d.log.Error("dynwatch stopped", "err", err)
		return ErrFailed
	}
	return nil
}

// openContext is what openState may wait on: the Lease's context (nil
// without leader election), ended too by a shutdown, so that a shutdown
// while the state file is brought to this shard (a reshard's wait for the
// other shards) stops at once; what is set aside stays for the next start.
func openContext(shutdown, lease context.Context) context.Context {
	if lease == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(lease)
	stop := context.AfterFunc(shutdown, cancel)
	context.AfterFunc(ctx, func() { stop() })
	return ctx
}

// watchEnd ends the watcher's run when the shutdown or the lease ends: a lost
// lease halts delivery at once (another replica is taking over), and so does
// a shutdown under leader election with state (the queue is on disk and the
// next leader delivers it); a plain shutdown drains.
func (d *daemon) watchEnd(ctx, lease, wctx context.Context, w *watcher.Watcher, durable bool, stop context.CancelFunc) {
	var leaseDone <-chan struct{}
	if lease != nil {
		leaseDone = lease.Done()
	}
	select {
	case <-wctx.Done():
		return
	case <-ctx.Done():
		if lease != nil && durable {
			d.log.Info("stopping: undelivered events stay on disk for the next leader")
			w.Halt()
		}
	case <-leaseDone:
		if ctx.Err() == nil {
			d.log.Warn("lost the lease: delivery stopped at once; another replica takes over")
			w.Halt()
		}
	}
	stop()
}

// config returns the config to act on: the file as it is now if it changed
// since it was last loaded (a standby that comes to lead acts on the current
// file) and is valid under the first file's load options (run's --strict),
// else the last valid one.
func (d *daemon) config() *plan.File {
	d.mu.Lock()
	defer d.mu.Unlock()
	data, changed := watcher.ReadIfChanged(d.file.Path, d.file.Source)
	if !changed {
		return d.file
	}
	f, err := plan.ParseWith(d.file.Path, data, d.file.LoadOptions())
	if err != nil {
		d.log.Error("config file invalid; acting on the last valid one", "config", d.file.Path, "err", err)
		return d.file
	}
	if err := watcher.ClustersRestartOnly(d.o.File, f); err != nil {
		d.log.Error("config not applied; acting on the last valid one", "config", d.file.Path, "err", err)
		return d.file
	}
	f.LogWarnings(d.log)
	d.file = f
	return f
}

func (d *daemon) remember(f *plan.File) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.file = f
}

// openState opens the state file of state.path (after discarding it, the first
// time, if reset is asked for); without state.path it returns nil. Under leader
// election the last leader may still hold the file for a moment: it is tried
// again until the lease ends, or for leaseDuration + renewDeadline (a last
// leader that lost the Lease has stopped by then; a file held longer is held
// by something else, and a replica that cannot open it must not keep the
// Lease).
func (d *daemon) openState(file *plan.File, lease context.Context) (*state.Store, error) {
	if !file.StateEnabled() {
		if d.o.ResetState {
			d.log.Warn("--reset-state given but the config has no state.path: nothing to reset")
		}
		return nil, nil
	}
	path := file.Config.State.Path
	if d.o.ResetState {
		d.o.ResetState = false
		if err := d.reset(path); err != nil {
			return nil, err
		}
	}
	var giveUp time.Time
	if le := d.o.File.Config.LeaderElection; le != nil { // the elector's, which reloads do not change
		giveUp = time.Now().Add(le.LeaseDuration.Std() + le.RenewDeadline.Std())
	}
	for {
		store, err := state.Open(path)
		switch {
		case err == nil:
			if err := d.shardState(lease, store); err != nil {
				store.Close()
				if errors.Is(err, errLeaseEnded) {
					return nil, errLeaseEnded
				}
				d.log.Error("cannot open the state", "err", err)
				return nil, ErrFailed
			}
			d.joined()
			return store, nil
		case lease == nil || !errors.Is(err, state.ErrInUse) || time.Now().After(giveUp):
			d.log.Error("cannot open the state", "err", err)
			return nil, ErrFailed
		}
		d.log.Info("the state file is still held by the last leader; waiting", "path", path)
		select {
		case <-lease.Done():
			return nil, errLeaseEnded
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (d *daemon) reset(path string) error {
	recs, pending, err := state.Reset(path)
	switch {
	case err != nil:
		d.log.Error("cannot reset the state", "path", path, "err", err)
		return ErrFailed
	case recs < 0:
		d.log.Warn("state reset: the old file was unreadable; starting over", "path", path)
	default:
		d.log.Warn("state reset: starting over", "path", path, "objectRecords", recs, "undeliveredEvents", pending)
	}
	return nil
}

func (d *daemon) queueSamples() []metrics.QueueSample {
	if w := d.current.Load(); w != nil {
		return w.QueueSamples()
	}
	return nil
}

func (d *daemon) ruleErrors() map[string]uint64 {
	w := d.current.Load()
	if w == nil {
		return nil
	}
	out := map[string]uint64{}
	for _, r := range w.File().Rules {
		out[r.Name] = r.CELErrors()
	}
	return out
}

// timedCounts is, per timed rule of the config, its objects pending and
// firing (a rule with none is served as 0).
func (d *daemon) timedCounts() map[string][2]int {
	w := d.current.Load()
	if w == nil {
		return nil
	}
	counts := w.TimedCounts()
	out := map[string][2]int{}
	for _, r := range w.File().Rules {
		if r.Timed() {
			out[r.Name] = counts[r.Name]
		}
	}
	return out
}

func (d *daemon) watchSamples() []metrics.WatchSample {
	w := d.current.Load()
	if w == nil {
		return nil
	}
	var out []metrics.WatchSample
	for _, st := range w.Statuses() {
		res := st.Key.GVR.Resource
		if st.Key.GVR.Group != "" {
			res += "." + st.Key.GVR.Group
		}
		out = append(out, metrics.WatchSample{Resource: res, Namespace: st.Key.Namespace, Synced: st.Synced, LastEvent: st.LastEvent, Cluster: st.Key.Cluster, Objects: st.Objects})
	}
	return out
}

// clusterSamples is, with clusters, whether each answers.
func (d *daemon) clusterSamples() []metrics.ClusterSample {
	w := d.current.Load()
	if w == nil {
		return nil
	}
	var out []metrics.ClusterSample
	for _, c := range w.Clusters() {
		out = append(out, metrics.ClusterSample{Name: c.Name, Up: c.Up})
	}
	return out
}

package watcher

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/dynwatch/dynwatch/discovery"
	"github.com/dynwatch/dynwatch/dyninformer"
	"github.com/dynwatch/dynwatch/rules"
)

// health is what the watcher reports of its own health: in the log (when
// everything has synced, when no watch works, discovery that fails, rules
// that select nothing) and, through Watcher.Statuses and Watcher.StateErr,
// for /readyz and metrics.
type health struct {
	log     *slog.Logger
	sources func() []*source // the clusters
	durable *durable         // nil without state.path
	// warned holds the rules already warned about selecting nothing, by
	// cluster and rule; the watcher's mu guards it.
	warned map[string]bool
	// synced is Options.Synced.
	synced func()
}

// reportSynced logs once when every informer has listed (and, with state, every
// list has been compared with the records), with how long it took.
func (h *health) reportSynced(ctx context.Context, start time.Time) {
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, false, func(context.Context) (bool, error) {
		for _, s := range h.sources() {
			if !s.applied.Load() || !s.mgr.HasSynced() { // not reached yet, or listing
				return false, nil
			}
		}
		return h.durable == nil || len(h.durable.listingKeys()) == 0, nil
	})
	if err == nil {
		n := 0
		for _, s := range h.sources() {
			n += len(s.mgr.Watches())
		}
		h.log.Info("all informers synced", "after", time.Since(start).Round(time.Millisecond).String(), "watches", n)
		if h.synced != nil {
			h.synced()
		}
	}
}

// reportNoWatch says at WARN, checking every period, when no watch works at
// all (none is asked for, or every one fails: a user without permissions), so
// that a daemon that delivers nothing does not look healthy; and at INFO when
// one works again.
func (h *health) reportNoWatch(ctx context.Context, period time.Duration) {
	warned := false
	wait.UntilWithContext(ctx, func(context.Context) {
		var statuses []dyninformer.Status
		applied := false
		for _, s := range h.sources() {
			if s.applied.Load() { // a cluster not reached yet is said elsewhere
				applied = true
				statuses = append(statuses, s.mgr.Statuses()...)
			}
		}
		if !applied {
			return
		}
		failing := map[string]string{}
		for _, st := range statuses {
			if !st.Synced && st.Err != nil {
				failing[st.Key.String()] = st.Err.Error()
			}
		}
		none := len(statuses) == 0 || len(failing) == len(statuses)
		switch {
		case none && !warned:
			warned = true
			if len(statuses) == 0 {
				h.log.Warn("no working watch: no rule selects a served resource, so nothing can fire")
			} else {
				h.log.Warn("no working watch: every watch fails, so nothing can fire (dynwatch check --cluster shows what is denied)", "failing", failing)
			}
		case !none && warned:
			warned = false
			h.log.Info("a watch works again", "watches", len(statuses), "failing", len(failing))
		}
	}, period)
}

// reportFailed logs the group versions whose discovery failed in s, once each.
func (h *health) reportFailed(s *source, cat, prev *discovery.Catalog) {
	for gv, gerr := range cat.Failed {
		if prev != nil {
			if _, seen := prev.Failed[gv]; seen {
				continue
			}
		}
		s.log.Warn("discovery failed for a group version; its resources are not watched until it recovers", "groupVersion", gv.String(), "err", gerr)
	}
}

// reportSelectsNothing warns, once until it selects something again, about
// each rule that selects no resource in s (selected maps each rule to what
// it selects); the watcher's mu is held.
func (h *health) reportSelectsNothing(s *source, rs []*rules.Rule, selected map[string][]discovery.Resource, cat *discovery.Catalog) {
	for _, r := range rs {
		empty := len(selected[r.Name]) == 0
		key := s.name + "/" + r.Name
		if empty && !h.warned[key] {
			warnSelectsNothing(s.log, r, cat)
		}
		h.warned[key] = empty
	}
}

// warnSelectsNothing says that a rule selects no served resource, and why
// when it can tell: resources that cannot be watched, or names close to served
// ones; else that it fires once one appears (a CRD installed later).
func warnSelectsNothing(log *slog.Logger, r *rules.Rule, cat *discovery.Catalog) {
	var why []string
	for _, sel := range r.Selectors {
		if s := cat.WhyNothing(sel); s != "" {
			why = append(why, sel.String()+": "+s)
		}
	}
	if len(why) == 0 {
		log.Warn("rule selects no served resource yet; it fires once one appears", "rule", r.Name)
		return
	}
	log.Warn("rule selects no resource it can watch", "rule", r.Name, "why", strings.Join(why, "; "))
}

// StateErr returns why commits to the state file fail while they do (events
// then wait in memory and are retried), else nil; for /readyz.
func (w *Watcher) StateErr() error {
	if w.durable == nil {
		return nil
	}
	if err := w.durable.commits.Err(); err != nil {
		return err
	}
	return w.durable.marks.Err()
}

// Statuses returns every watch's health (the CRD watches included), for
// /readyz and metrics; with clusters, each key names its cluster.
func (w *Watcher) Statuses() []dyninformer.Status {
	var out []dyninformer.Status
	for _, s := range w.sources() {
		out = append(out, s.statuses()...)
	}
	return out
}

// Synced reports whether every informer of every cluster, the CRD ones
// included, has listed once.
func (w *Watcher) Synced() bool {
	for _, s := range w.sources() {
		if !s.synced() {
			return false
		}
	}
	return true
}

// Listed returns, for each watch that has listed, the resourceVersion of
// its first list, by the state scope it lists (state.Scope.String): a list
// at it holds what that watch's list held (with clusters, in the watch's
// cluster).
// The CRD watch each cluster keeps for discovery is not among them: a rule
// on CRDs has a watch of its own, and its scope's list is that one's.
func (w *Watcher) Listed() map[string]string {
	out := map[string]string{}
	for _, s := range w.sources() {
		if !s.connected.Load() {
			continue
		}
		for _, st := range s.mgr.Statuses() {
			if st.Synced && st.Listed != "" {
				out[watchScope(st.Key).String()] = st.Listed
			}
		}
	}
	return out
}

package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// identity names this replica: $POD_NAME in a cluster, else host and pid.
func identity(o Options) string {
	if o.Identity != "" {
		return o.Identity
	}
	if p := os.Getenv("POD_NAME"); p != "" {
		return p
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s_%d", host, os.Getpid())
}

// elect takes part in leader election on the Lease until ctx ends, acting
// while it leads and standing by otherwise. A shutdown while leading stops
// acting first and then releases the Lease, so that the next replica takes
// over at once; a lost Lease stops delivery at once.
func (d *daemon) elect(ctx context.Context) error {
	le := d.o.File.Config.LeaderElection
	id := identity(d.o)
	name := d.leaseName(le.Name)
	li := d.leaseLock(ctx, id)
	d.log.Info("leader election: standing by until elected", "lease", le.Namespace+"/"+name, "identity", id)
	for ctx.Err() == nil {
		if err := d.term(ctx, li, id); err != nil {
			return err
		}
	}
	return nil
}

// term is one round of leader election: it returns when the Lease is lost (to
// stand by again) or ctx ends, or with the error of a replica that won the
// Lease but could not act. Acting ends the term: the Lease is given up at once
// (a replica that cannot act must not hold it while a healthy one waits).
func (d *daemon) term(ctx context.Context, lock resourcelock.Interface, id string) error {
	le := d.o.File.Config.LeaderElection
	d.newTerm()
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	var (
		mu      sync.Mutex
		leading bool // OnStartedLeading ran, and done will be closed
		ended   bool // elector.Run returned: OnStartedLeading must not act
		actErr  error
		lost    bool // the Lease ended while acting
		done    = make(chan struct{})
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		Name:          d.leaseName(le.Name),
		LeaseDuration: le.LeaseDuration.Std(),
		RenewDeadline: le.RenewDeadline.Std(),
		RetryPeriod:   le.RetryPeriod.Std(),
		// Not ReleaseOnCancel: after a failed renewal client-go would try a
		// release (for up to renewDeadline) before it ends the leading
		// context, so a leader cut off from the API server would act on
		// while another takes the Lease. The term releases it itself, once
		// acting has stopped (releaseLease).
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lease context.Context) {
				mu.Lock()
				if ended {
					mu.Unlock()
					return
				}
				leading = true
				mu.Unlock()
				defer close(done)
				defer cancel() // the term ends with acting (then the Lease is released)
				d.log.Info("leader election: this replica leads; acting", "identity", id)
				actErr = d.act(ctx, lease)
				lost = lease.Err() != nil
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(leader string) {
				if leader != id {
					d.log.Info("leader election: another replica leads", "leader", leader)
				}
			},
		},
	})
	if err != nil {
		d.log.Error("leader election", "err", err)
		return ErrFailed
	}
	// A shutdown ends the term, after acting has stopped if this replica
	// leads: the Lease is released only then. Stopped with the term, so that
	// no goroutine is left waiting for the shutdown.
	stopOnShutdown := context.AfterFunc(ctx, func() {
		mu.Lock()
		wasLeading := leading
		mu.Unlock()
		if wasLeading {
			<-done
		}
		cancel()
	})
	defer stopOnShutdown()
	elector.Run(ectx)
	mu.Lock()
	ended = true
	wasLeading := leading
	mu.Unlock()
	if !wasLeading {
		if elector.IsLeader() { // won as the shutdown came, and never acted
			d.release(lock, id)
		}
		return nil
	}
	<-done
	return d.termEnd(ctx, lock, id, actErr, lost)
}

// release gives the Lease up if this replica still holds it (releaseLease),
// saying so when it cannot.
func (d *daemon) release(lock resourcelock.Interface, id string) {
	if err := releaseLease(lock, id, d.o.File.Config.LeaderElection.RenewDeadline.Std()); err != nil {
		d.log.Warn("leader election: cannot release the Lease; a standby takes over once it expires", "err", err)
	}
}

// releaseLease gives the Lease up if id still holds it (what client-go's release
// writes: no holder, a lease of one second), so that a standby takes over at
// once rather than after leaseDuration. The update is conditional on the
// version read: a Lease another replica took meanwhile stays its own.
func releaseLease(lock resourcelock.Interface, id string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	rec, _, err := lock.Get(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("read the lease: %w", err)
	case rec.HolderIdentity != id:
		return nil
	}
	now := metav1.NewTime(time.Now())
	err = lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions: rec.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now,
	})
	if err != nil && !apierrors.IsConflict(err) { // a conflict: another replica took it
		return fmt.Errorf("release the lease: %w", err)
	}
	return nil
}

// termEnd ends a term in which this replica acted, and says how it ended:
// actErr is what acting returned, lost whether the Lease had ended by then.
// Acting has stopped: a Lease this replica still holds (a shutdown, acting
// that could not go on, a shutdown as the Lease ended) is given up for a
// standby.
func (d *daemon) termEnd(ctx context.Context, lock resourcelock.Interface, id string, actErr error, lost bool) error {
	d.release(lock, id)
	switch {
	case errors.Is(actErr, errLeaseEnded):
	case actErr != nil && !lost && ctx.Err() == nil:
		d.log.Error("leader election: this replica cannot act; it gave the Lease up for another to take", "err", actErr)
		return actErr
	case actErr != nil:
		return actErr
	}
	if ctx.Err() == nil {
		d.log.Warn("leader election: lost the Lease; standing by")
	}
	return nil
}

package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

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
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Name},
		Client:     d.o.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	d.log.Info("leader election: standing by until elected", "lease", le.Namespace+"/"+le.Name, "identity", id)
	for ctx.Err() == nil {
		if err := d.term(ctx, lock, id); err != nil {
			return err
		}
	}
	return nil
}

// term is one round of leader election: it returns when the Lease is lost (to
// stand by again) or ctx ends.
func (d *daemon) term(ctx context.Context, lock resourcelock.Interface, id string) error {
	le := d.o.File.Config.LeaderElection
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	var (
		mu      sync.Mutex
		leading bool
		actErr  error
		done    = make(chan struct{})
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            le.Name,
		LeaseDuration:   le.LeaseDuration.Std(),
		RenewDeadline:   le.RenewDeadline.Std(),
		RetryPeriod:     le.RetryPeriod.Std(),
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lease context.Context) {
				mu.Lock()
				leading = true
				mu.Unlock()
				defer close(done)
				d.log.Info("leader election: this replica leads; acting", "identity", id)
				actErr = d.act(ctx, lease)
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
	go func() {
		<-ctx.Done()
		mu.Lock()
		wasLeading := leading
		mu.Unlock()
		if wasLeading {
			<-done // stop acting before the Lease is released
		}
		cancel()
	}()
	elector.Run(ectx)
	mu.Lock()
	wasLeading := leading
	mu.Unlock()
	if !wasLeading {
		return nil
	}
	<-done
	switch {
	case ctx.Err() != nil:
		if errors.Is(actErr, errLeaseEnded) {
			return nil
		}
		return actErr
	case actErr != nil && !errors.Is(actErr, errLeaseEnded):
		return actErr
	}
	d.log.Warn("leader election: lost the Lease; standing by")
	return nil
}

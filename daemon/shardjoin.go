package daemon

import (
	"context"
	"maps"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// labelJoining is "1" on a shard's Lease from its holder's takeover until
// the holder has brought its state file to its spec (shardState: what the
// Leases say of the previous spec is kept in the file), and "0" after. A
// process killed in between, whose Lease shows its spec already, is thus
// still new to the set at its next start, or a standby's (newToSet).
const labelJoining = "dynwatch.io/shard-joining"

// joinLock is a shard's Lease lock whose labels its holder can change while
// it holds the Lease: each write of the Lease (Create, Update) carries the
// labels as they are then.
type joinLock struct {
	*resourcelock.LeaseLock
	mu     sync.Mutex
	labels map[string]string
}

// newJoinLock wraps lock, whose Labels are the shard's, marked joining.
func newJoinLock(lock *resourcelock.LeaseLock) *joinLock {
	labels := maps.Clone(lock.Labels)
	labels[labelJoining] = "1"
	return &joinLock{LeaseLock: lock, labels: labels}
}

// Create implements resourcelock.Interface.
func (l *joinLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.LeaseLock.Labels = maps.Clone(l.labels)
	return l.LeaseLock.Create(ctx, ler)
}

// Update implements resourcelock.Interface.
func (l *joinLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.LeaseLock.Labels = maps.Clone(l.labels)
	return l.LeaseLock.Update(ctx, ler)
}

// leaseLock is the lock of this process's Lease, as identity id; a shard's
// carries its labels (shardLeaseLabels) and says while it joins.
func (d *daemon) leaseLock(ctx context.Context, id string) resourcelock.Interface {
	le := d.o.File.Config.LeaderElection
	name := d.leaseName(le.Name)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: name},
		Client:     d.o.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		Labels:     d.shardLeaseLabels(ctx, le.Namespace, name),
	}
	if lock.Labels == nil {
		return lock
	}
	d.join = newJoinLock(lock)
	return d.join
}

// joined notes that the holder's state file is brought to its spec: the
// Lease's next renewal says so.
func (l *joinLock) joined() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.labels[labelJoining] = "0"
}

// joined tells this shard's Lease lock (with shards and leader election)
// that the state file is brought to the shard's spec.
func (d *daemon) joined() {
	if d.join != nil {
		d.join.joined()
	}
}

package daemon

import (
	"context"
	"maps"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// labelJoining is "1" on a shard's Lease from its holder's takeover until
// the holder has brought its state file to its spec (shardState: what the
// Leases say of the previous spec is kept in the file), and "0" after. A
// process killed in between, whose Lease shows its spec already, is thus
// still new to the set at its next start, or a standby's (newToSet).
const labelJoining = "dynwatch.io/shard-joining"

// labelListed is "1" on a shard's Lease once its holder has listed every
// resource it watches (its first lists since it took the Lease over), "0"
// before; labelListedRV is then the resourceVersion of the Lease write that
// first said so, later than all those lists ("" before). A shard that set
// records aside at a reshard waits for the new owners to say so, and asks
// the API server which of those objects existed at that resourceVersion
// (settleMovedAway): those deleted before the new owner listed are its to
// replay; the new owner had the others.
const (
	labelListed   = "dynwatch.io/shard-listed"
	labelListedRV = "dynwatch.io/shard-listed-rv"
)

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
	unlisted(labels)
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

// leaseLock is the lock of this process's Lease, as identity id: its writes
// carry the marks this holder publishes (dressLease); a shard's carries its
// labels (shardLeaseLabels) and says while it joins and once it listed.
func (d *daemon) leaseLock(ctx context.Context, id string) resourcelock.Interface {
	le := d.o.File.Config.LeaderElection
	name := d.leaseName(le.Name)
	writes := leaseWrites{LeasesGetter: d.o.Kube.CoordinationV1(), dress: d.dressLease}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: name},
		Client:     writes,
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		Labels:     d.shardLeaseLabels(ctx, le.Namespace, name),
	}
	if lock.Labels == nil {
		return lock
	}
	d.join = newJoinLock(lock)
	writes.wrote = d.join.sawWrite
	lock.Client = writes
	return d.join
}

// joined notes that the holder's state file is brought to its spec: the
// Lease's next renewal says so.
func (l *joinLock) joined() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.labels[labelJoining] = "0"
}

// newTerm notes that a new term begins (its takeover write is next): it
// has not listed in it.
func (l *joinLock) newTerm() {
	l.mu.Lock()
	defer l.mu.Unlock()
	unlisted(l.labels)
}

// unlisted sets labels to say their holder has not listed (a Lease only
// gains labels: "" overwrites an earlier term's listed-rv).
func unlisted(labels map[string]string) {
	labels[labelListed], labels[labelListedRV] = "0", ""
}

// listed notes that the holder has listed every resource it watches: the
// Lease's next renewal says so, and the one after gives the
// resourceVersion of that write (sawWrite).
func (l *joinLock) listed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.labels[labelListed] = "1"
}

// sawWrite is shown each write of the Lease the API server took (under
// l.mu: Create and Update hold it): the first that said the holder listed
// gives its resourceVersion to labelListedRV.
func (l *joinLock) sawWrite(sent, got *coordinationv1.Lease) {
	if sent.Labels[labelListed] == "1" && l.labels[labelListedRV] == "" {
		l.labels[labelListedRV] = got.ResourceVersion
	}
}

// listed tells this shard's Lease lock (with shards and leader election)
// that every resource is listed.
func (d *daemon) listed() {
	if d.join != nil {
		d.join.listed()
	}
}

// joined tells this shard's Lease lock (with shards and leader election)
// that the state file is brought to the shard's spec.
func (d *daemon) joined() {
	if d.join != nil {
		d.join.joined()
	}
}

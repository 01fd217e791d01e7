package daemon

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// leaseWrites is the Leases client of this process's Lease lock: each
// write the elector makes (Create, Update) is dressed first (the
// annotations this holder publishes: leaseMarks) and, once the API server
// took it, shown to wrote with what it returned (joinLock: the
// resourceVersion of the write that first said the shard had listed).
// Reads go through as they are.
type leaseWrites struct {
	coordinationv1client.LeasesGetter
	dress func(*coordinationv1.Lease)
	wrote func(sent, got *coordinationv1.Lease)
}

// Leases implements coordinationv1client.LeasesGetter.
func (c leaseWrites) Leases(namespace string) coordinationv1client.LeaseInterface {
	return leaseWriter{LeaseInterface: c.LeasesGetter.Leases(namespace), c: c}
}

type leaseWriter struct {
	coordinationv1client.LeaseInterface
	c leaseWrites
}

func (w leaseWriter) Create(ctx context.Context, l *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	w.before(l)
	got, err := w.LeaseInterface.Create(ctx, l, opts)
	w.after(l, got, err)
	return got, err
}

func (w leaseWriter) Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	w.before(l)
	got, err := w.LeaseInterface.Update(ctx, l, opts)
	w.after(l, got, err)
	return got, err
}

func (w leaseWriter) before(l *coordinationv1.Lease) {
	if w.c.dress != nil {
		w.c.dress(l)
	}
}

func (w leaseWriter) after(sent, got *coordinationv1.Lease, err error) {
	if err == nil && got != nil && w.c.wrote != nil {
		w.c.wrote(sent, got)
	}
}

// Package testenv starts a real etcd and kube-apiserver on loopback for tests and
// the demo. The binaries are built by hack/testenv (`make testenv`).
//
// It is a small harness of its own rather than controller-runtime's envtest: it
// runs the same two binaries the same way, but keeps controller-runtime and its
// dependencies out of the product's go.mod, and lets tests add token users with
// narrower RBAC in one line.
//
// It also holds what the tests of several packages share around the cluster:
// a namespace per test, ConfigMaps, a RoundTripper made of a function, a
// buffer for logs and WaitFor.
package testenv

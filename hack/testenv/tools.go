//go:build tools

// Package testenv pins the control-plane binaries that the tests build.
package testenv

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)

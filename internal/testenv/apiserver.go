package testenv

import (
	"errors"
	"syscall"
	"time"
)

// StopAPIServer stops the kube-apiserver and leaves etcd running: the
// cluster cannot be reached, and keeps its objects, until StartAPIServer.
// Every Env is a control plane of its own (its etcd, its API server, its
// ports), so a test that needs two clusters starts a second Env and can take
// one down while the other runs.
func (e *Env) StopAPIServer() error {
	if len(e.procs) != 2 {
		return errors.New("testenv: the API server is not running")
	}
	p := e.procs[1]
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	e.procs = e.procs[:1]
	return nil
}

// StartAPIServer starts the kube-apiserver that StopAPIServer stopped, on the
// same port, certificates and etcd, and waits until it is ready: clients
// made before reach it again.
func (e *Env) StartAPIServer() error {
	if len(e.procs) != 1 {
		return errors.New("testenv: the API server is running")
	}
	if err := e.spawn(e.apiBin, "kube-apiserver-2.log", e.apiArgs...); err != nil {
		return err
	}
	return e.waitReady(60 * time.Second)
}

// spawnAPIServer starts the kube-apiserver and keeps how, for StartAPIServer.
func (e *Env) spawnAPIServer(bin string, args []string) error {
	e.apiBin, e.apiArgs = bin, args
	return e.spawn(bin, "kube-apiserver.log", args...)
}

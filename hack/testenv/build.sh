#!/usr/bin/env bash
# Builds kube-apiserver and etcd from this module into $1 (default: ../../.testenv/bin).
# A binary that is already there is not rebuilt; remove it to force a rebuild.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../.testenv/bin}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$here"
# kube-apiserver reports the version it was built from (as Kubernetes' own build
# stamps it), so `kubectl version` and a chart's kubeVersion see v1.37.2, not v0.0.0-master.
kver=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
kmajor=${kver#v}; kmajor=${kmajor%%.*}
kminor=${kver#v*.}; kminor=${kminor%%.*}
vpkg=k8s.io/component-base/version
kflags="-X $vpkg.gitVersion=$kver -X $vpkg.gitMajor=$kmajor -X $vpkg.gitMinor=$kminor -X $vpkg.gitTreeState=clean"
build() { # build NAME PACKAGE [LDFLAGS]
	if [ -x "$out/$1" ]; then
		echo "testenv: $out/$1 is already built"
		return
	fi
	echo "testenv: building $1 (the first build of kube-apiserver takes several minutes)"
	go build -ldflags "${3:-}" -o "$out/$1.tmp" "$2"
	mv "$out/$1.tmp" "$out/$1"
}
build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$kflags"
echo "testenv: binaries in $out"

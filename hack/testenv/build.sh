#!/usr/bin/env bash
# Builds kube-apiserver and etcd from this module into $1 (default: ../../.testenv/bin).
# A binary that is already there is not rebuilt; remove it to force a rebuild.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../.testenv/bin}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$here"
build() { # build NAME PACKAGE
	if [ -x "$out/$1" ]; then
		echo "testenv: $out/$1 is already built"
		return
	fi
	echo "testenv: building $1 (the first build of kube-apiserver takes several minutes)"
	go build -o "$out/$1.tmp" "$2"
	mv "$out/$1.tmp" "$out/$1"
}
build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
echo "testenv: binaries in $out"

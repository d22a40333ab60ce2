#!/usr/bin/env bash
# Builds the real Kubernetes control plane the tests run against, idempotently:
#   kube-apiserver, kube-controller-manager, kube-scheduler (k8s.io/kubernetes, kubernetes/go.mod),
#   etcd (go.etcd.io/etcd/server/v3 at the version that release requires, kubernetes/cmd/etcd),
#   kubelet-streams (kubernetes/cmd/kubelet-streams: the kubelet's exec and logs endpoints for kwok's Nodes),
#   kwok (sigs.k8s.io/kwok, kwok/go.mod) and kwok-stages.yaml, its own Stage objects (from the same module:
#   kwokctl's "fast" node and pod stages with the lease heartbeat), which kwok takes with --config.
#
#   bash tests/controlplane/build.sh [BINDIR]     default: $GPUDIRECT_BUILD or ./build, then controlplane/bin
#
# The binaries are kept per machine in $GPUDIRECT_CACHE (default ~/.cache/aiinfra-gpudirect), under a key
# made of the go.mod and go.sum files, this script and the Go version, so a fresh clone on the same machine
# copies them instead of building again; a change to any of those builds anew. The Go module and build
# caches (GOMODCACHE, GOCACHE) are Go's own and shared with everything else on the machine.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bindir=${1:-${GPUDIRECT_BUILD:-$root/build}/controlplane/bin}
cache_root=${GPUDIRECT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aiinfra-gpudirect}/controlplane
binaries=(kube-apiserver kube-controller-manager kube-scheduler etcd kubelet-streams kwok)

command -v go >/dev/null || { echo "build.sh: go is not on PATH; the control plane is built from Go modules"; exit 1; }
key=$( (cat "$here"/kubernetes/go.mod "$here"/kubernetes/go.sum "$here"/kubernetes/cmd/*/main.go \
            "$here"/kwok/go.mod "$here"/kwok/go.sum "$here/build.sh"; go env GOVERSION) | sha256sum | cut -c1-16)
cached=$cache_root/$key

have_all() {  # have_all DIR: every binary is there and runs
    local name
    for name in "${binaries[@]}"; do [ -x "$1/$name" ] || return 1; done
    [ -s "$1/kwok-stages.yaml" ]
}

if [ -f "$bindir/.key" ] && [ "$(cat "$bindir/.key")" = "$key" ] && have_all "$bindir"; then
    echo "control plane already built ($bindir)"
    exit 0
fi

if ! have_all "$cached"; then
    start=$(date +%s)
    echo "building the control plane into $cached (cold: about 8 minutes on 2 cores, with the modules downloaded)"
    tmp=$cached.tmp.$$
    rm -rf "$tmp" && mkdir -p "$tmp"
    # The version the binaries report (/version's gitVersion, `kube-apiserver --version`): what
    # hack/lib/version.sh stamps into a release build. Read from go.mod, so the two cannot differ.
    version=$(awk '$1 == "k8s.io/kubernetes" { print $2 }' "$here/kubernetes/go.mod" | head -1)
    minor=$(echo "$version" | cut -d. -f2)
    pkg=k8s.io/component-base/version
    ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
    ldflags="$ldflags -X $pkg.buildDate=1970-01-01T00:00:00Z"
    ldflags="$ldflags -X k8s.io/client-go/pkg/version.gitVersion=$version -X k8s.io/client-go/pkg/version.gitMajor=1"
    ldflags="$ldflags -X k8s.io/client-go/pkg/version.gitMinor=$minor"
    export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" GOTOOLCHAIN=local
    (cd "$here/kubernetes" &&
        go build -trimpath -ldflags "$ldflags" -o "$tmp/" k8s.io/kubernetes/cmd/kube-apiserver \
            k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler &&
        go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" ./cmd/etcd &&
        go build -trimpath -ldflags "-s -w" -o "$tmp/kubelet-streams" ./cmd/kubelet-streams)
    (cd "$here/kwok" && go build -trimpath -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=v0.8.0" -o "$tmp/kwok" sigs.k8s.io/kwok/cmd/kwok)
    # kwok's Stages, as kwokctl gives them to kwok (node-fast, node-heartbeat-with-lease, pod-fast).
    stages=$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
    for file in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
                pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
        printf -- '---\n' && cat "$stages/$file.yaml"
    done >"$tmp/kwok-stages.yaml"
    have_all "$tmp"
    rm -rf "$cached" && mv "$tmp" "$cached"
    # Builds of older inputs are not used again: keep the machine's cache to this one.
    find "$cache_root" -mindepth 1 -maxdepth 1 ! -name "$key" -exec rm -rf {} +
    echo "control plane built in $(($(date +%s) - start)) s"
fi

rm -rf "$bindir" && mkdir -p "$bindir"
cp "$cached"/* "$bindir"/
echo "$key" >"$bindir/.key"
"$bindir/kube-apiserver" --version

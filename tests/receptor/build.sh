#!/usr/bin/env bash
# Builds Receptor, the mesh AWX runs its jobs over (github.com/ansible/receptor, command receptor-cl, installed as
# `receptor`), for tests/integration/test_receptor_mesh.py; idempotently, as tests/controlplane/build.sh builds the
# control plane: kept per machine in $GPUDIRECT_CACHE under a key of the version, this script and the Go version.
#
#   bash tests/receptor/build.sh [BINDIR]     default: $GPUDIRECT_BUILD or ./build, then receptor/bin
#
# The module comes from the Go module proxy by `go install` (no other source). Exits 1 with the reason when it
# cannot be had, which the caller reports; the mesh test then skips its Receptor case and says why.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bindir=${1:-${GPUDIRECT_BUILD:-$root/build}/receptor/bin}
cache_root=${GPUDIRECT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aiinfra-gpudirect}/receptor
# The newest tagged release seen; receptorctl (tests/requirements.txt) speaks its control protocol.
version=v1.4.9

command -v go >/dev/null || { echo "receptor/build.sh: go is not on PATH; Receptor is built from its Go module"; exit 1; }
key=$( (echo "$version"; cat "$here/build.sh"; go env GOVERSION) | sha256sum | cut -c1-16)
cached=$cache_root/$key

if [ -f "$bindir/.key" ] && [ "$(cat "$bindir/.key")" = "$key" ] && [ -x "$bindir/receptor" ]; then
    echo "receptor already built ($bindir)"
    exit 0
fi

if [ ! -x "$cached/receptor" ]; then
    start=$(date +%s)
    echo "building receptor $version into $cached"
    tmp=$cached.tmp.$$
    rm -rf "$tmp" && mkdir -p "$tmp"
    if ! log=$(CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-buildvcs=false GOBIN="$tmp" \
               go install -trimpath -ldflags "-s -w" "github.com/ansible/receptor/cmd/receptor-cl@$version" 2>&1); then
        rm -rf "$tmp"
        echo "receptor/build.sh: go install github.com/ansible/receptor/cmd/receptor-cl@$version failed:"
        echo "$log" | tail -5
        exit 1
    fi
    mv "$tmp/receptor-cl" "$tmp/receptor"
    "$tmp/receptor" --version >/dev/null
    rm -rf "$cached" && mv "$tmp" "$cached"
    find "$cache_root" -mindepth 1 -maxdepth 1 ! -name "$key" -exec rm -rf {} +
    echo "receptor built in $(($(date +%s) - start)) s"
fi

rm -rf "$bindir" && mkdir -p "$bindir"
cp "$cached/receptor" "$bindir/"
echo "$key" >"$bindir/.key"
"$bindir/receptor" --version

#!/usr/bin/env bash
# Builds Receptor, the mesh AWX runs its jobs over (github.com/ansible/receptor, command receptor-cl, installed as
# `receptor`), for tests/integration/test_receptor_mesh.py; idempotently, as tests/controlplane/build.sh builds the
# control plane: kept per machine in $GPUDIRECT_CACHE under a key of the version, this script and the Go version.
#
#   bash tests/receptor/build.sh [BINDIR]     default: $GPUDIRECT_BUILD or ./build, then receptor/bin
#
# Receptor's own source is kept beside this script (receptor-1.4.9-src.tar.gz, SOURCE.md says what it is and where
# from): the Go module proxy refuses github.com/ansible/receptor itself (403), while it serves every module Receptor
# needs, which `go build` takes from it (go.sum pins each). Exits 1 with the reason when it cannot be built, which the
# caller reports; the mesh test then skips its Receptor case and says why.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bindir=${1:-${GPUDIRECT_BUILD:-$root/build}/receptor/bin}
cache_root=${GPUDIRECT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aiinfra-gpudirect}/receptor
# The newest tagged release seen; receptorctl (tests/requirements.txt) speaks its control protocol.
version=1.4.9
archive=$here/receptor-$version-src.tar.gz
# sha256 of the archive, checked before a build (SOURCE.md says how it was made)
archive_sha256=c99166aee6f252a6b018547f1fa5c09a544fe974fce589c60d9128c662c2ba56

command -v go >/dev/null || { echo "receptor/build.sh: go is not on PATH; Receptor is built from its Go source"; exit 1; }
key=$( (echo "$version $archive_sha256"; cat "$here/build.sh"; go env GOVERSION) | sha256sum | cut -c1-16)
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
    echo "$archive_sha256  $archive" | sha256sum --check --quiet || { rm -rf "$tmp"; echo "receptor/build.sh: $archive is not the archive SOURCE.md describes"; exit 1; }
    tar -xzf "$archive" -C "$tmp"
    # The release's own build sets the version the same way (its Makefile's LDFLAGS).
    if ! log=$(cd "$tmp/receptor-$version" && CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-buildvcs=false \
               go build -trimpath -ldflags "-s -w -X github.com/ansible/receptor/internal/version.Version=v$version" \
               -o "$tmp/receptor" ./cmd/receptor-cl 2>&1); then
        rm -rf "$tmp"
        echo "receptor/build.sh: go build of Receptor $version failed:"
        echo "$log" | tail -5
        exit 1
    fi
    rm -rf "${tmp:?}/receptor-$version"
    "$tmp/receptor" --version >/dev/null
    rm -rf "$cached" && mv "$tmp" "$cached"
    find "$cache_root" -mindepth 1 -maxdepth 1 ! -name "$key" -exec rm -rf {} +
    echo "receptor built in $(($(date +%s) - start)) s"
fi

rm -rf "$bindir" && mkdir -p "$bindir"
cp "$cached/receptor" "$bindir/"
echo "$key" >"$bindir/.key"
"$bindir/receptor" --version

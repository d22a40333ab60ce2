#!/usr/bin/env bash
# The Molecule stage of the host-preparation tests: role cos_host_prep on stand-in COS hosts, with
# RxDM and the NCCL plugin installer run for real through the podman Docker API socket.
#
#   bash tests/ci/molecule.sh [SCENARIO...]     default: tcpx tcpxo failure
#
# Needs the collection copy that scripts/test makes (GPUDIRECT_BUILD/ansible_collections/aiinfra/
# gpudirect) and the venv on PATH (molecule, molecule-plugins[podman]). Sets up podman itself
# (tests/ci/podman.sh) and puts containers.podman, which the podman driver needs, beside our
# collection, taken from the `ansible` wheel on PyPI because Galaxy is unreachable here.
# Scenarios share one engine and the host paths RxDM uses: run one molecule stage at a time per machine.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${GPUDIRECT_BUILD:-$ROOT/build}
COLLECTION_DIR=$BUILD/ansible_collections/aiinfra/gpudirect
VENV=${GPUDIRECT_VENV:-$ROOT/.venv}
export PATH="$VENV/bin:$PATH"

containers_podman() {
    local target=$BUILD/ansible_collections/containers/podman
    if [ -f "$target/MANIFEST.json" ]; then
        echo "molecule: containers.podman present in $BUILD"
        return 0
    fi
    local wheel_dir=$BUILD/deps/wheel
    mkdir -p "$wheel_dir"
    ls "$wheel_dir"/ansible-*.whl >/dev/null 2>&1 ||
        pip download -q --no-deps -d "$wheel_dir" "ansible>=12,<13" 2>&1 | grep -v '^WARNING: Location'
    python3 - "$wheel_dir" "$BUILD" <<'PY' || return 1
import pathlib, sys, zipfile
wheel = sorted(pathlib.Path(sys.argv[1]).glob('ansible-*.whl'))[-1]
with zipfile.ZipFile(wheel) as zf:
    for name in zf.namelist():
        if name.startswith('ansible_collections/containers/podman/'):
            zf.extract(name, sys.argv[2])
print('molecule: containers.podman taken from %s' % wheel.name)
PY
}

main() {
    local scenarios=("$@") failed=0 scenario start took summary=()
    [ "${#scenarios[@]}" -eq 0 ] && scenarios=(tcpx tcpxo failure)
    [ -d "$COLLECTION_DIR" ] || { echo "molecule: $COLLECTION_DIR is missing; run scripts/test setup first"; return 1; }
    # shellcheck source=tests/ci/podman.sh
    source "$ROOT/tests/ci/podman.sh" || return 1
    containers_podman || return 1
    export ANSIBLE_COLLECTIONS_PATH=$BUILD ANSIBLE_FORCE_COLOR=0 MOLECULE_NO_LOG=false
    cd "$COLLECTION_DIR/roles/cos_host_prep" || return 1
    for scenario in "${scenarios[@]}"; do
        start=$EPOCHREALTIME
        echo "=== molecule test -s $scenario ==="
        if molecule test -s "$scenario"; then
            took=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
            summary+=("molecule $scenario: ok in ${took}s")
        else
            took=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
            summary+=("molecule $scenario: FAILED in ${took}s")
            failed=1
        fi
    done
    printf '%s\n' "${summary[@]}"
    return "$failed"
}

main "$@"

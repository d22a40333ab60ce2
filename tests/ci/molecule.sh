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

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"

containers_podman() {
    # The podman driver needs containers.podman beside our collection.
    if [ -f "$BUILD/ansible_collections/containers/podman/MANIFEST.json" ]; then
        echo "molecule: containers.podman present in $BUILD"
        return 0
    fi
    wheel_collection containers podman "$BUILD" | sed 's/^/molecule: /'
}

main() {
    local scenarios=("$@") failed=0 scenario start took result summary=()
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
        result=ok
        molecule test -s "$scenario" || { result=FAILED; failed=1; }
        took=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
        summary+=("molecule $scenario: $result in ${took}s")
    done
    printf '%s\n' "${summary[@]}"
    return "$failed"
}

main "$@"

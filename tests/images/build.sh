#!/usr/bin/env bash
# Build the stand-in images (see build.py); needs CONTAINERS_CONF from tests/ci/podman.sh.
exec python3 "$(dirname "${BASH_SOURCE[0]}")/build.py" "$@"

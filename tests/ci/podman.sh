#!/usr/bin/env bash
# A real container engine for the host-preparation tests (gpudirect_rxdm, nccl_plugin, role
# cos_host_prep): podman speaking the Docker Engine API on a unix socket, plus the locally built
# stand-in images. Idempotent: every step checks first and says what it does.
#
#   source tests/ci/podman.sh    (exports the variables below; returns non-zero on failure)
#   bash tests/ci/podman.sh      (same, for a one-off setup)
#
# Exports:
#   CONTAINERS_CONF           runtime runc, cgroupfs, rlimits this machine allows (testbed.md)
#   GPUDIRECT_DOCKER_SOCKET   the Docker API socket (podman system service)
#   GPUDIRECT_PODMAN_DIR      where the conf, socket, service log and image build contexts live
# Inputs: GPUDIRECT_BUILD (default ROOT/build); GPUDIRECT_PODMAN_DIR overrides the directory.
#
# Stand-ins it creates on this machine, because sibling containers started through the socket see
# this machine as their host (as RxDM sees the COS host): the device nodes of the catalog
# (/dev/nvidia0-7, nvidiactl, nvidia-uvm, dmabuf_import_helper) as char nodes of major 195, the
# NVIDIA major, so device passthrough is tested for real (allowed: ENXIO, denied: EPERM). They are
# made only when missing and only on a machine without an NVIDIA driver (/proc/driver/nvidia).

_podman_main() {
    local build
    _PODMAN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    build=${GPUDIRECT_BUILD:-$_PODMAN_ROOT/build}
    export GPUDIRECT_PODMAN_DIR=${GPUDIRECT_PODMAN_DIR:-$build/podman}
    export GPUDIRECT_DOCKER_SOCKET=$GPUDIRECT_PODMAN_DIR/docker.sock
    export CONTAINERS_CONF=$GPUDIRECT_PODMAN_DIR/containers.conf
    mkdir -p "$GPUDIRECT_PODMAN_DIR" || return 1

    _podman_packages || return 1
    _podman_conf || return 1
    _podman_service || return 1
    _podman_device_standins || return 1
    bash "$_PODMAN_ROOT/tests/images/build.sh" || return 1
}

_podman_packages() {
    local missing=() pkg
    for pkg in podman buildah runc debootstrap busybox-static fuse-overlayfs uidmap; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        echo "podman: packages present"
        return 0
    fi
    echo "podman: installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

_podman_conf() {
    # Out of the box crun cannot set rlimits here and systemd cgroups do not exist (testbed.md);
    # a private containers.conf fixes both without touching /etc.
    cat >"$CONTAINERS_CONF.new" <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
    if cmp -s "$CONTAINERS_CONF.new" "$CONTAINERS_CONF"; then
        rm -f "$CONTAINERS_CONF.new"
    else
        mv "$CONTAINERS_CONF.new" "$CONTAINERS_CONF"
        echo "podman: wrote $CONTAINERS_CONF"
    fi
}

_podman_ping() {
    python3 - "$GPUDIRECT_DOCKER_SOCKET" <<'PY' 2>/dev/null
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(3)
s.connect(sys.argv[1])
s.sendall(b'GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n')
sys.exit(0 if s.recv(64).startswith(b'HTTP/1.') else 1)
PY
}

_podman_service() {
    if _podman_ping; then
        echo "podman: Docker API already served on $GPUDIRECT_DOCKER_SOCKET"
        return 0
    fi
    rm -f "$GPUDIRECT_DOCKER_SOCKET"
    echo "podman: starting 'podman system service --time=0 unix://$GPUDIRECT_DOCKER_SOCKET' (log: $GPUDIRECT_PODMAN_DIR/service.log)"
    nohup podman system service --time=0 "unix://$GPUDIRECT_DOCKER_SOCKET" >"$GPUDIRECT_PODMAN_DIR/service.log" 2>&1 &
    echo $! >"$GPUDIRECT_PODMAN_DIR/service.pid"
    local i
    for i in $(seq 1 50); do
        _podman_ping && return 0
        sleep 0.2
    done
    echo "podman: the service did not answer on $GPUDIRECT_DOCKER_SOCKET within 10 s:"
    tail -n 20 "$GPUDIRECT_PODMAN_DIR/service.log"
    return 1
}

_podman_device_standins() {
    if [ -e /proc/driver/nvidia ]; then
        echo "podman: an NVIDIA driver is loaded here; using its device nodes, creating no stand-ins"
        return 0
    fi
    local spec path made=()
    # The catalog's device list as PATH:MINOR, all of the NVIDIA major 195 (see the header).
    for spec in $(python3 - "$_PODMAN_ROOT" <<'PY'
import os, sys, tempfile
# The catalog imports itself as ansible_collections.aiinfra.gpudirect...: give the checkout that name.
top = tempfile.mkdtemp()
os.makedirs(top + '/ansible_collections/aiinfra')
os.symlink(os.path.abspath(sys.argv[1]), top + '/ansible_collections/aiinfra/gpudirect')
sys.path.insert(0, top)
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import host_stacks
paths = host_stacks.NVIDIA_DEVICES + (host_stacks.DMABUF_DEVICE,)
print(' '.join('%s:%d' % (p, int(p[11:]) if p[11:].isdigit() else 240 + i) for i, p in enumerate(paths)))
PY
); do
        path=${spec%%:*}
        [ -c "$path" ] && continue
        mknod -m 0666 "$path" c 195 "${spec##*:}" || return 1
        made+=("$path")
    done
    if [ "${#made[@]}" -gt 0 ]; then
        echo "podman: created stand-in device nodes (major 195): ${made[*]}"
    else
        echo "podman: stand-in device nodes present"
    fi
    # The host directories RxDM and the installer bind-mount (catalog volumes); the Molecule targets
    # mount the same paths, as a COS host and its containers share them.
    for path in /var/lib/nvidia /var/lib/tcpx /var/lib/tcpxo /run/tcpx; do
        [ -d "$path" ] || { mkdir -p "$path" && echo "podman: created stand-in host directory $path"; }
    done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -uo pipefail
    _podman_main
    exit $?
else
    _podman_main
fi

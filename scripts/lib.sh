# Shared by scripts/test and scripts/demo: where things live and how the environment is made.
# shellcheck shell=bash

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${GPUDIRECT_VENV:-$ROOT/.venv}
# GPUDIRECT_BUILD lets several checkouts or people test at once without sharing a build tree.
BUILD=${GPUDIRECT_BUILD:-$ROOT/build}
COLLECTION_DIR=$BUILD/ansible_collections/aiinfra/gpudirect
# The real Kubernetes control plane's binaries (tests/controlplane/build.sh), for the tests run from COLLECTION_DIR.
export GPUDIRECT_CONTROLPLANE_BIN=$BUILD/controlplane/bin
# Receptor (tests/receptor/build.sh), for the AWX mesh test.
export GPUDIRECT_RECEPTOR_BIN=$BUILD/receptor/bin
PY=${PYTHON:-python3}
export PATH="$VENV/bin:$PATH"
export PIP_DISABLE_PIP_VERSION_CHECK=1 ANSIBLE_NOCOLOR=1 PY_COLORS=0
# Keep pytest workers to the CPUs we have; CI has 2 cores.
JOBS=${GPUDIRECT_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}

system_packages() {
    # The few system tools the suite needs; installed only when missing (CI runs as root on Debian).
    local missing=()
    command -v git >/dev/null || missing+=(git)
    "$PY" -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "installing system packages: ${missing[*]}"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    command -v gcloud >/dev/null || { echo "gcloud (Cloud SDK) is not on PATH: the faithfulness tests need the real CLI"; return 1; }
}

setup() {
    system_packages || return 1
    local stamp="$VENV/.requirements.sha256" want
    want=$(cat "$ROOT/requirements.txt" "$ROOT/tests/requirements.txt" | sha256sum | cut -d' ' -f1)
    if [ ! -x "$VENV/bin/python" ]; then
        "$PY" -m venv "$VENV" || return 1
    fi
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        echo "installing pinned Python dependencies into $VENV"
        (cd "$ROOT/tests" && "$VENV/bin/pip" install -q -r requirements.txt 2>&1 | grep -v '^WARNING: Location'
         exit "${PIPESTATUS[0]}") || return 1
        "$VENV/bin/pip" check >/dev/null || { "$VENV/bin/pip" check; return 1; }
        echo "$want" >"$stamp"
    else
        echo "dependencies already installed ($VENV)"
    fi
    get_pip_standin "$VENV" || return 1
    # The real Kubernetes control plane of the GKE and OpenShift tests (built once per machine, then copied).
    bash "$ROOT/tests/controlplane/build.sh" "$GPUDIRECT_CONTROLPLANE_BIN" || return 1
    # Receptor, AWX's execution mesh, for tests/integration/test_receptor_mesh.py, from its source in tests/receptor.
    bash "$ROOT/tests/receptor/build.sh" "$GPUDIRECT_RECEPTOR_BIN" || return 1
    # The collection as ansible-test and Python imports expect it: .../ansible_collections/aiinfra/gpudirect.
    # A copy (not a symlink): ansible-test resolves the real path of the working directory.
    rm -rf "$COLLECTION_DIR" && mkdir -p "$COLLECTION_DIR"
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - 2>/dev/null) |
        tar -xf - -C "$COLLECTION_DIR" || return 1
    # ansible-test sanity uses git to list files when it finds a repository; give it one of its own.
    (cd "$COLLECTION_DIR" && git init -q && git add -A && git -c user.name=ci -c user.email=ci@localhost commit -qm snapshot) || return 1
    dependency_collections
}

get_pip_standin() {
    # ansible-test downloads a get-pip.py for every sanity virtualenv from a host this network
    # cannot reach; it looks in its cache first, so put our stand-in there under each name it asks.
    # get_pip_standin VENV: for the ansible-test of that virtualenv (each ansible-core pins its pip).
    local pip_version
    pip_version=$("$1/bin/python" - <<'EOF'
import re, ansible_test, pathlib
src = pathlib.Path(ansible_test.__file__).parent / '_internal' / 'python_requirements.py'
print(re.search(r"pip='([0-9.]+)'", src.read_text()).group(1))
EOF
) || return 1
    mkdir -p "$HOME/.ansible/test/cache"
    install -m 0644 "$ROOT/tests/ci/get_pip_standin.py" "$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
}

# The ansible-core minors that meta/runtime.yml (requires_ansible) claims. The main virtualenv holds 2.19
# (tests/requirements.txt); each other one gets a virtualenv of its own, on the Python it needs.
ANSIBLE_CORES=(2.17 2.18 2.19 2.20 2.21)
CORE_VENVS=${GPUDIRECT_CORE_VENVS:-$ROOT/.venv-cores}

core_python() {
    # core_python MINOR: the Python that ansible-core MINOR runs on here. 2.20 and later need 3.12 on the
    # controller; this machine has it from pyenv (python3.12 on PATH, or under PYENV_ROOT).
    case $1 in
        2.17|2.18|2.19) echo "$PY" ;;
        *) command -v python3.12 >/dev/null && python3.12 -c '' 2>/dev/null && { command -v python3.12; return; }
           ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12 2>/dev/null | tail -1 | grep . ||
               { echo "ansible-core $1 needs Python 3.12: install it (pyenv install 3.12)" >&2; return 1; } ;;
    esac
}

core_venv() {
    # core_venv MINOR: print the path of a virtualenv with ansible-core MINOR.* and what the sanity and
    # unit tests need (tests/requirements-core.txt); made once, remade when the requirements change.
    local minor=$1 dir="$CORE_VENVS/ansible-core-$1" want python
    python=$(core_python "$minor") || return 1
    want=$(cat "$ROOT/requirements.txt" "$ROOT/tests/requirements-core.txt" | sha256sum | cut -d' ' -f1)-$minor-$("$python" -V 2>&1)
    if [ "$(cat "$dir/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
        echo "making $dir" >&2
        rm -rf "$dir"
        "$python" -m venv "$dir" || return 1
        (cd "$ROOT/tests" && "$dir/bin/pip" install -q "ansible-core==$minor.*" -r requirements-core.txt 2>&1 |
            grep -v '^WARNING: Location' >&2; exit "${PIPESTATUS[0]}") || return 1
        "$dir/bin/pip" check >&2 || return 1
        echo "$want" >"$dir/.requirements.sha256"
    fi
    get_pip_standin "$dir" >&2 || return 1
    echo "$dir"
}

dependency_collections() {
    # kubernetes.core (our one Galaxy dependency) comes from the `ansible` package on PyPI, since
    # Galaxy is unreachable here: its files are taken from the wheel and built into a tarball, so
    # `ansible-galaxy collection install --offline` can resolve our dependency from files.
    local deps=$BUILD/deps
    if ! ls "$deps"/kubernetes-core-*.tar.gz >/dev/null 2>&1; then
        pack_kubernetes_core "$deps" || return 1
    fi
    # Beside our own copy, so ansible-lint and playbooks resolve kubernetes.core without Galaxy.
    [ -f "$BUILD/ansible_collections/kubernetes/core/MANIFEST.json" ] ||
        ansible-galaxy collection install --offline -p "$BUILD" "$deps"/kubernetes-core-*.tar.gz >/dev/null
    # awx.awx, for its modules' argument specs: the AWX templates under awx/ are checked against them (no AWX runs here).
    [ -f "$BUILD/ansible_collections/awx/awx/MANIFEST.json" ] || wheel_collection awx awx "$BUILD" >/dev/null
}

wheel_collection() {
    # wheel_collection NAMESPACE NAME DEST: copy a collection out of the `ansible` package on PyPI
    # (Galaxy is unreachable here) into the collections directory DEST. The wheel is downloaded once,
    # into $BUILD/deps/wheel, and kept for every later use (tests/ci/molecule.sh, bench/).
    local wheels=$BUILD/deps/wheel
    mkdir -p "$wheels"
    ls "$wheels"/ansible-*.whl >/dev/null 2>&1 ||
        "$VENV/bin/pip" download -q --no-deps -d "$wheels" "ansible>=12,<13" 2>&1 | grep -v '^WARNING: Location'
    "$VENV/bin/python" - "$wheels" "$1" "$2" "$3" <<'EOF'
import pathlib, sys, zipfile
wheels, namespace, name, dest = sys.argv[1:5]
wheel = sorted(pathlib.Path(wheels).glob('ansible-*.whl'))[-1]
with zipfile.ZipFile(wheel) as zf:
    for member in zf.namelist():
        if member.startswith('ansible_collections/%s/%s/' % (namespace, name)):
            zf.extract(member, dest)
print('%s.%s taken from %s' % (namespace, name, wheel.name))
EOF
}

pack_kubernetes_core() {
    local deps=$1
    rm -rf "$deps/src"
    wheel_collection kubernetes core "$deps/src" >/dev/null || return 1
    "$VENV/bin/python" - "$deps" <<'EOF' || return 1
# The wheel leaves out some files that FILES.json lists (.github/, CI config); list only what is
# there, and re-sign the manifest's checksum of FILES.json, so the tarball matches itself.
import hashlib, json, pathlib, sys
deps = pathlib.Path(sys.argv[1])
root = deps / 'src' / 'ansible_collections' / 'kubernetes' / 'core'
files = json.loads((root / 'FILES.json').read_text())
files['files'] = [e for e in files['files'] if (root / e['name']).exists()]
(root / 'FILES.json').write_text(json.dumps(files, indent=4))
manifest = json.loads((root / 'MANIFEST.json').read_text())
manifest['file_manifest_file']['chksum_sha256'] = hashlib.sha256((root / 'FILES.json').read_bytes()).hexdigest()
(root / 'MANIFEST.json').write_text(json.dumps(manifest, indent=4))
EOF
    # An installed collection (MANIFEST.json + FILES.json + files) has the layout of a release
    # tarball, so packing it as it is gives the artifact Galaxy would have served.
    local src=$deps/src/ansible_collections/kubernetes/core version
    version=$("$VENV/bin/python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["collection_info"]["version"])' "$src/MANIFEST.json") || return 1
    (cd "$src" && tar -czf "$deps/kubernetes-core-$version.tar.gz" -- *) || return 1
    rm -rf "$deps/src"   # the wheel stays: tests/ci/molecule.sh takes containers.podman from it
}


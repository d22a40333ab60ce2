"""Build the locally made stand-in images the host-preparation tests run (nothing is pulled).

Each image is rebuilt only when it is missing or its inputs changed (a hash label). Stand-ins for
vendor images are tagged with the catalog's own references (every known version pair), so the
modules under test use the catalog's names; the readiness lines, device lists and plugin
directories they act on come from the catalog too (plugins/module_utils/catalog/, imported from this checkout:
it is standard library only).

Images:
  localhost/aiinfra-standin/debian-minbase:bookworm  debootstrap --variant=minbase, podman import
  localhost/aiinfra-standin/cos:latest               the COS host stand-in (cos/)
  <catalog RxDM refs of TCPX and TCPXO>              RxDM stand-ins (rxdm/), ready after about 1 s
  localhost/aiinfra-standin/rxdm-never-ready:latest  an RxDM that never gets ready (rxdm/)
  <catalog plugin image refs>                        plugin image stand-ins (installer/): the installer, the NCCL
                                                     test container's daemon / shell and its synthetic nccl-tests scripts
  localhost/aiinfra-standin/nccl-plugin-TECH:HASH    the same, under its inputs' hash (installer_content_tag)
"""

import hashlib
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import types

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STANDIN = 'localhost/aiinfra-standin'
BASE = STANDIN + '/debian-minbase:bookworm'
COS = STANDIN + '/cos:latest'
NEVER_READY = STANDIN + '/rxdm-never-ready:latest'
DEBIAN_MIRROR = 'http://deb.debian.org/debian'
# Stand-in values the vendor images would carry; only their presence is tested, not the numbers.
PLUGIN_BANNERS = {'TCPX': 'NET/GPUDirectTCPX ver. 3.1.1', 'TCPXO': 'NET/FasTrak ver. 1.0.13'}
NCCL_VERSIONS = {'TCPX': '2.18.1', 'TCPXO': '2.21.5'}


def load_families():
    """The catalog (plugins/module_utils/catalog/) as one namespace: families.py and host_stacks.py."""
    # The catalog imports itself as ansible_collections.aiinfra.gpudirect...: give the checkout that name.
    top = pathlib.Path(tempfile.mkdtemp())
    (top / 'ansible_collections' / 'aiinfra').mkdir(parents=True)
    (top / 'ansible_collections' / 'aiinfra' / 'gpudirect').symlink_to(ROOT.resolve())
    sys.path.insert(0, str(top))
    families = importlib.import_module('ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog.families')
    host_stacks = importlib.import_module('ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog.host_stacks')
    return types.SimpleNamespace(**dict(vars(families), **vars(host_stacks)))


def podman(*args, check=True, capture=False):
    return subprocess.run(('podman',) + args, check=check, text=True,
                          stdout=subprocess.PIPE if capture else None, stderr=subprocess.PIPE if capture else None)


def image_hash(ref):
    result = podman('image', 'inspect', '--format', '{{ index .Labels "aiinfra.standin.hash" }}', ref,
                    check=False, capture=True)
    return result.stdout.strip() if result.returncode == 0 else None


def inputs_hash(directory, build_args):
    digest = hashlib.sha256()
    for path in sorted(directory.rglob('*')):
        if path.is_file():
            digest.update(path.relative_to(directory).as_posix().encode() + b'\0' + path.read_bytes())
    for key in sorted(build_args):
        digest.update(('%s=%s\n' % (key, build_args[key])).encode())
    return digest.hexdigest()[:16]


def build(directory, tags, build_args, with_busybox=False, network_host=False):
    """Build ``directory`` as every tag in ``tags`` unless all carry the current input hash."""
    wanted = inputs_hash(directory, build_args)
    if all(image_hash(tag) == wanted for tag in tags):
        print('images: up to date: %s' % ', '.join(tags))
        return
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix='standin-') as context:
        shutil.copytree(directory, context, dirs_exist_ok=True)
        if with_busybox:
            shutil.copy2(shutil.which('busybox') or '/bin/busybox', os.path.join(context, 'busybox'))
        args = ['build', '-q', '--layers=false']
        if network_host:
            args.append('--network=host')
        for key, value in dict(build_args, STANDIN_HASH=wanted).items():
            args += ['--build-arg', '%s=%s' % (key, value)]
        for tag in tags:
            args += ['-t', tag]
        podman(*(args + [context]), capture=True)
    print('images: built %s in %.1f s' % (', '.join(tags), time.monotonic() - started))


def build_base():
    if podman('image', 'exists', BASE, check=False).returncode == 0:
        print('images: present: %s' % BASE)
        return
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix='debootstrap-') as rootfs:
        print('images: debootstrap --variant=minbase bookworm (about 30 s)')
        subprocess.run(['debootstrap', '--variant=minbase', 'bookworm', rootfs, DEBIAN_MIRROR],
                       check=True, stdout=subprocess.DEVNULL)
        tar = subprocess.Popen(['tar', '-C', rootfs, '-cf', '-', '.'], stdout=subprocess.PIPE)
        subprocess.run(['podman', 'import', '-q', '-', BASE], stdin=tar.stdout, check=True, stdout=subprocess.DEVNULL)
        if tar.wait() != 0:
            raise RuntimeError('tar of the debootstrap root failed')
    print('images: built %s in %.1f s' % (BASE, time.monotonic() - started))


def installer_args(stack, tech):
    return dict(STANDIN_BASE=BASE, STANDIN_PLUGIN_DIR=stack.plugin_dir, STANDIN_PLUGIN_BANNER=PLUGIN_BANNERS[tech],
                STANDIN_NCCL_VERSION=NCCL_VERSIONS[tech])


def installer_content_tag(families, tech):
    """The plugin image stand-in under a tag of its inputs' hash, which no other checkout's build moves: tests that need
    this checkout's scripts (the fabric diagnosis' faults) run it, while worktrees with other scripts share one engine
    and retag the catalog's references."""
    return '%s/nccl-plugin-%s:%s' % (STANDIN, tech.lower(), inputs_hash(HERE / 'installer', installer_args(families.HOST_STACKS[tech], tech)))


def main():
    families = load_families()
    build_base()
    build(HERE / 'cos', [COS], {}, network_host=True)
    for tech, stack in families.HOST_STACKS.items():
        pairs = [p for p in families.VERSION_PAIRS if p.technology == tech]
        rxdm_args = dict(STANDIN_TECH=tech, STANDIN_DEVICES=' '.join(stack.rxdm.devices),
                         STANDIN_READY_LINE=stack.rxdm_ready_line)
        build(HERE / 'rxdm', sorted({p.rxdm_image for p in pairs}), rxdm_args, with_busybox=True)
        build(HERE / 'installer', sorted({p.plugin_image for p in pairs}) + [installer_content_tag(families, tech)],
              installer_args(stack, tech))
    tcpx = families.HOST_STACKS['TCPX']
    build(HERE / 'rxdm', [NEVER_READY], dict(STANDIN_TECH='TCPX', STANDIN_DEVICES=' '.join(tcpx.rxdm.devices),
                                             STANDIN_READY_LINE=tcpx.rxdm_ready_line, STANDIN_NEVER_READY='1'),
          with_busybox=True)


if __name__ == '__main__':
    try:
        main()
    except subprocess.CalledProcessError as exc:
        sys.exit('images: %s failed (exit %s): %s' % (' '.join(exc.cmd[:3]), exc.returncode, (exc.stderr or '').strip()[-2000:]))

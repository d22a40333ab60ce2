"""GKE benchmark: our playbook against seed 003's manual sequence (gcloud + kubectl), side by side in one run.

    .venv/bin/python bench/gke.py [--latency 5] [--cluster-latency S] [--node-pool-latency S] [--poll 1]
                                  [--ours-only] [--profile] [--logs DIR] [--no-token-cache]

Both contenders work in their own project of one local sandbox (tests/sandbox) whose operations take
--latency seconds and whose GKE clusters come alive as real Kubernetes control planes (tests/sandbox/kube:
kube-apiserver, controller manager, scheduler; kwok's Pods, Running as soon as they are bound):

- ours: `ansible-playbook playbooks/gke_a3mega.yml` (networks, cluster, node pool, then the
  gke_gpudirect role: Networks, GKENetworkParamSets, the TCPXO installer and NRI injector DaemonSets,
  each waited for; its NCCL test left out, like the manual's below);
- manual: seed 003's GPUDirect-TCPXO commands as the manual writes them, run by the real gcloud and
  kubectl 1.33: the network loop, get-server-config, the cluster, the Network/GKENetworkParamSet
  heredoc, the node pool, `kubectl apply -f` of the installer and the NRI injector (the vendored
  copies of the manual's URLs, tests/sandbox/kube/manifests), each DaemonSet's `kubectl get pods`
  repeated every --poll seconds until its Pods run on every GPU node, as a reader of the manual does.

The critical path is the chain no tool can overlap: the networks (network -> subnet, two
operations) and, alongside them, the cluster (it needs none of the networks) -> node pool ->
DaemonSets ready, i.e. max(2 x latency, cluster latency) + node pool latency
(3 x latency when every operation takes --latency). --cluster-latency and
--node-pool-latency give those two Container operations their own duration (for example GKE's
minutes; the Compute operations keep --latency). The table gives each contender's wall time, its
ratio to the critical path and to ours, the CPU seconds of its processes, and its requests to the Compute/Container API and to the
cluster's Kubernetes API; then requests per resource; then a rerun of ours (target: no mutating
request to either API). Both contenders' kubeconfigs run gke-gcloud-auth-plugin, whose token cache is seeded as a
user's is after the first call (seed_plugin_token_cache; --no-token-cache leaves it empty).
"""

import argparse
import collections
import json
import os
import pathlib
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get('GPUDIRECT_BUILD', str(ROOT / 'build')))
sys.path.insert(0, str(ROOT / 'tests'))
sys.path.insert(0, str(ROOT / 'bench'))

from sandbox import Sandbox  # noqa: E402  pylint: disable=wrong-import-position
from sandbox.gcloud import gcloud_environment  # noqa: E402  pylint: disable=wrong-import-position
from _bench_collections import collections_dir  # noqa: E402  pylint: disable=wrong-import-position

MACHINE_TYPE, ACCELERATOR, DATA_NETWORKS, GPU_NODES = 'a3-megagpu-8g', 'nvidia-h100-mega-80gb', 8, 2
REGION, ZONE, CLUSTER, POOL = 'us-central1', 'us-central1-a', 'a3mega', 'a3mega-gpu'
OURS, MANUAL = 'bench-ours', 'bench-manual'
DAEMONSETS = ('nccl-tcpxo-installer', 'device-injector')
MANIFESTS = ROOT / 'tests' / 'sandbox' / 'kube' / 'manifests'
# The manual's `kubectl apply -f URL`s, served from the vendored copies (no network here).
INSTALLER = MANIFESTS / 'gpudirect-tcpxo' / 'nccl-tcpxo-installer.yaml'
NRI_INJECTOR = MANIFESTS / 'nri_device_injector' / 'nri-device-injector.yaml'
NETWORK_OBJECTS = MANIFESTS / 'seeds' / '003-tcpxo-networks.yaml'   # the manual's heredoc, PROJECT_ID as written
MUTATING = ('POST', 'PATCH', 'PUT', 'DELETE')


def sdk_bin():
    gcloud = shutil.which('gcloud')
    if gcloud is None:
        raise SystemExit('gcloud is not on PATH')
    return pathlib.Path(os.path.realpath(gcloud)).parent


def collections_path_of_build(profile=False):
    """aiinfra/gpudirect is this checkout, kubernetes/core the one `bash scripts/test` installs beside the build."""
    kubernetes_core = BUILD / 'ansible_collections' / 'kubernetes' / 'core'
    if not (kubernetes_core / 'MANIFEST.json').is_file():
        raise SystemExit('%s is missing: run `bash scripts/test build` (or set GPUDIRECT_BUILD)' % kubernetes_core)
    return collections_dir({('aiinfra', 'gpudirect'): ROOT, ('kubernetes', 'core'): kubernetes_core}, profile)


def tool_env(sandbox, project, config):
    """gcloud's environment for ``project`` (tests/sandbox/gcloud.py) plus what kubectl and
    gke-gcloud-auth-plugin need: the SDK's bin directory on PATH and a token file (the stand-in
    accepts any bearer token; tests/sandbox/kube/README-runtime.md)."""
    env = gcloud_environment(sandbox, str(config), project)
    (config / 'token').write_text('sandbox-token\n', encoding='ascii')
    env.update(CLOUDSDK_AUTH_ACCESS_TOKEN_FILE=str(config / 'token'), PATH='%s:%s' % (sdk_bin(), env.get('PATH', '')))
    return env


def seed_plugin_token_cache(config, context):
    """gke-gcloud-auth-plugin's token cache, as the plugin leaves it after its first call for a user whose gcloud
    credentials carry an expiry (user or service-account credentials): ``gke_gcloud_auth_plugin_cache`` in the
    directory of $KUBECONFIG, keyed by that file's current context (the plugin reads $KUBECONFIG, not the kubeconfig
    that runs it; "" while the file does not exist), valid for an hour. Later calls answer from it in about 10 ms instead of
    running ``gcloud config config-helper`` (about 0.5 CPU-s). The bench's gcloud authenticates with an access-token
    file, which has no expiry, so the plugin cannot cache by itself here; --no-token-cache measures that case."""
    expiry = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(time.time() + 3600))
    cache = {'current_context': context, 'access_token': 'sandbox-token', 'token_expiry': expiry}
    (config / 'gke_gcloud_auth_plugin_cache').write_text(json.dumps(cache), encoding='utf-8')


def progress(text):
    print('%s %s' % (time.strftime('%H:%M:%S'), text), file=sys.stderr, flush=True)


def must(command, env, log, stdin=None):
    """Run ``command``, its output appended to ``log`` as it comes (a failure ends the benchmark with its tail);
    returns its stdout."""
    with open(log, 'a', encoding='utf-8') as handle:
        handle.write('$ %s\n' % ' '.join(command))
        handle.flush()
        result = subprocess.run(command, env=env, input=stdin, stdout=subprocess.PIPE, stderr=handle, text=True, check=False)
        handle.write(result.stdout)
    if result.returncode != 0:
        tail = pathlib.Path(log).read_text(encoding='utf-8')[-4000:]
        raise SystemExit('%s failed (exit %d); the end of %s:\n%s' % (' '.join(command[:5]), result.returncode, log, tail))
    return result.stdout


class Ours:
    """ansible-playbook playbooks/gke_a3mega.yml, the NCCL test left out."""

    name = 'ours (playbooks/gke_a3mega.yml)'

    def __init__(self, sandbox, config, collections_path, poll, profile=False, token_cache=True):
        self.env = {key: value for key, value in tool_env(sandbox, OURS, config).items() if not key.startswith('ANSIBLE_')}
        if token_cache:   # ours never writes $KUBECONFIG (config/kubeconfig): its own kubeconfig is gpudirect_kubeconfig_path
            seed_plugin_token_cache(config, '')
        self.env.update(GCP_PROJECT=OURS, GCP_AUTH_KIND='accesstoken', GCP_ACCESS_TOKEN='sandbox-token',
                        ANSIBLE_COLLECTIONS_PATH=str(collections_path), ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='False')
        if profile:   # per-task times at the end of the output, the 40 slowest
            self.env.update(ANSIBLE_CALLBACKS_ENABLED='ansible.posix.profile_tasks', PROFILE_TASKS_TASK_OUTPUT_LIMIT='40')
        extra = {'gpudirect_project': OURS, 'gpudirect_location': ZONE, 'gpudirect_cluster': CLUSTER, 'gpudirect_node_pool': POOL,
                 'gpudirect_network_prefix': OURS, 'gpudirect_node_count': GPU_NODES,
                 'gpudirect_kubeconfig_path': str(config / 'ours-kubeconfig'), 'gke_gpudirect_nccl_test': False,
                 # The role's waits poll as often as the manual's reader (its default, 5 s, suits real clusters).
                 'gke_gpudirect_wait_delay': max(1, round(poll))}
        self.command = [str(pathlib.Path(sys.executable).parent / 'ansible-playbook'), '-i',
                        str(ROOT / 'inventories' / 'sandbox' / 'hosts.yml'), str(ROOT / 'playbooks' / 'gke_a3mega.yml'),
                        '-e', json.dumps(extra)]
        self.log = config / 'playbook.log'

    def __call__(self):
        progress('ours: ansible-playbook (output in %s)' % self.log)
        with open(self.log, 'a', encoding='utf-8') as log:
            log.write('$ %s\n' % ' '.join(self.command))
            log.flush()
            returncode = subprocess.run(self.command, env=self.env, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
        if returncode != 0:
            tail = self.log.read_text(encoding='utf-8')[-4000:]
            raise SystemExit('our playbook failed (exit %d); the end of %s:\n%s' % (returncode, self.log, tail))


class Manual:
    """Seed 003's GPUDirect-TCPXO sequence, command by command (see the module docstring)."""

    name = 'manual (seed 003: gcloud + kubectl)'

    def __init__(self, sandbox, config, poll, version, token_cache=True):
        self.env, self.poll, self.version = tool_env(sandbox, MANUAL, config), poll, version
        if token_cache:   # get-credentials writes $KUBECONFIG with the current context gke_PROJECT_LOCATION_CLUSTER
            seed_plugin_token_cache(config, 'gke_%s_%s_%s' % (MANUAL, ZONE, CLUSTER))
        self.log = config / 'commands.log'

    def gcloud(self, *args):
        return must(['gcloud', *args], self.env, self.log)

    def kubectl(self, *args, stdin=None):
        return must([str(sdk_bin() / 'kubectl.1.33'), *args], self.env, self.log, stdin=stdin)

    def wait_running(self, label):
        """`kubectl get pods -n=kube-system -l=name=LABEL` until every GPU node's Pod is 1/1 Running."""
        while True:
            rows = self.kubectl('get', 'pods', '-n=kube-system', '-l=name=' + label).splitlines()[1:]
            if len([row for row in rows if re.search(r'\s1/1\s+Running\s', row)]) >= GPU_NODES:
                return
            time.sleep(self.poll)

    def __call__(self):
        project = MANUAL   # the manual names the networks PROJECT_ID-net-N
        progress('manual: gcloud and kubectl (commands and output in %s)' % self.log)
        for n in range(1, DATA_NETWORKS + 1):
            self.gcloud('compute', 'networks', 'create', '%s-net-%d' % (project, n), '--subnet-mode=custom', '--mtu=8244')
            self.gcloud('compute', 'networks', 'subnets', 'create', '%s-sub-%d' % (project, n), '--network=%s-net-%d' % (project, n),
                        '--region=' + REGION, '--range=192.168.%d.0/24' % n)
            self.gcloud('compute', 'firewall-rules', 'create', '%s-internal-%d' % (project, n), '--network=%s-net-%d' % (project, n),
                        '--action=ALLOW', '--rules=tcp:0-65535,udp:0-65535,icmp', '--source-ranges=192.168.0.0/16')
        self.gcloud('compute', 'networks', 'list')
        self.gcloud('container', 'get-server-config', '--format=yaml(validMasterVersions)', '--zone=' + ZONE, '--project=' + project)
        self.gcloud('--project', project, 'beta', 'container', 'clusters', 'create', CLUSTER, '--enable-dataplane-v2',
                    '--enable-ip-alias', '--zone=' + ZONE, '--enable-multi-networking', '--cluster-version=' + self.version,
                    '--no-enable-autoupgrade')
        self.kubectl('apply', '-f', '-', stdin=NETWORK_OBJECTS.read_text(encoding='utf-8').replace('PROJECT_ID', project))
        self.gcloud('beta', 'container', 'node-pools', 'create', POOL, '--zone=' + ZONE, '--cluster=' + CLUSTER,
                    '--project=' + project, '--accelerator=type=%s,count=8,gpu-driver-version=LATEST' % ACCELERATOR,
                    '--machine-type=' + MACHINE_TYPE, '--num-nodes=%d' % GPU_NODES,
                    *['--additional-node-network=network=%s-net-%d,subnetwork=%s-sub-%d' % (project, n, project, n)
                      for n in range(1, DATA_NETWORKS + 1)],
                    '--enable-gvnic', '--no-enable-autoupgrade', '--scopes', 'https://www.googleapis.com/auth/cloud-platform')
        self.kubectl('get', 'nodes')
        self.kubectl('apply', '-f', str(INSTALLER))
        self.wait_running('nccl-tcpxo-installer')
        self.kubectl('apply', '-f', str(NRI_INJECTOR))
        self.wait_running('device-injector')


# ----- what the sandbox saw -----------------------------------------------------------------------

def cloud_log(sandbox, project):
    marker = '/projects/%s/' % project
    return [entry for entry in sandbox.request_log() if marker in entry['path']]


def cloud_resource(entry):
    """compute.networks.insert -> compute.networks; container.projects.locations.clusters.nodePools.create -> container.nodePools."""
    method = (entry.get('api_method') or '?').split('.')
    parts = [part for part in method[1:-1] if part not in ('projects', 'locations', 'zones')]
    return '%s.%s' % (method[0], parts[-1] if parts else method[-1])


def kube_log(sandbox, project):
    kube = sandbox.kube.cluster('projects/%s/locations/%s/clusters/%s' % (project, ZONE, CLUSTER))
    return list(kube.requests) if kube else []


def kube_resource(path):
    """/apis/networking.gke.io/v1/networks/vpc1 -> networks.networking.gke.io; discovery and OpenAPI -> discovery."""
    parts = [part for part in path.split('?')[0].split('/') if part]
    if parts[:1] == ['api']:
        rest = parts[2:]
        group = ''
    elif parts[:1] == ['apis'] and len(parts) > 3:
        rest, group = parts[3:], parts[1]
    else:
        return 'discovery'
    if rest[:1] == ['namespaces'] and len(rest) > 2:
        rest = rest[2:]
    if not rest:
        return 'discovery'
    return rest[0] + ('.' + group if group else '')


def requests_by_resource(cloud, kube):
    counts = collections.Counter()
    for entry in cloud:
        counts[(cloud_resource(entry), entry['method'] in MUTATING)] += 1
    for method, path, _type, _accept in kube:
        counts[('k8s ' + kube_resource(path), method in MUTATING)] += 1
    return counts


def children_cpu():
    """CPU seconds (user + system) of this process's finished children and their waited-for descendants: the
    contender's ansible-playbook with its workers and modules, or its gcloud and kubectl runs (the sandbox is threads
    of this process and the control planes are its children that are never waited for before the end: not counted)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(contender, sandbox, project):
    cloud_before, kube_before = len(cloud_log(sandbox, project)), len(kube_log(sandbox, project))
    start, cpu_before = time.monotonic(), children_cpu()
    contender()
    wall, cpu = time.monotonic() - start, children_cpu() - cpu_before
    cloud, kube = cloud_log(sandbox, project)[cloud_before:], kube_log(sandbox, project)[kube_before:]
    return {'name': contender.name, 'wall': wall, 'cpu': cpu, 'cloud': len(cloud), 'cloud_mutating': sum(1 for e in cloud if e['method'] in MUTATING),
            'kube': len(kube), 'kube_mutating': sum(1 for e in kube if e[0] in MUTATING), 'by_resource': requests_by_resource(cloud, kube)}


def daemonsets_ready(sandbox, project):
    kube = sandbox.kube.cluster('projects/%s/locations/%s/clusters/%s' % (project, ZONE, CLUSTER))
    ready = {}
    for name in DAEMONSETS:
        found = kube.store.get('daemonsets.apps', name, 'kube-system') if kube else None
        ready[name] = (found or {}).get('status', {}).get('numberReady', 0)
    return ready


# ----- report ---------------------------------------------------------------------------------------

def critical_path(args):
    """network -> subnet, and the cluster alongside them -> node pool -> DaemonSets ready (seconds)."""
    return max(2 * args.latency, args.cluster_latency) + args.node_pool_latency


def durations(args):
    if args.cluster_latency == args.node_pool_latency == args.latency:
        return 'every operation takes %.1fs' % args.latency
    return 'Compute operations take %.1fs, the cluster creation %.1fs, the node pool creation %.1fs' % (
        args.latency, args.cluster_latency, args.node_pool_latency)


def print_report(args, rows, rerun, notes):
    critical = critical_path(args)
    ours = rows[0]
    print('Seed 003 TCPXO: %d networks, cluster, %d-node %s pool, Networks + GKENetworkParamSets, %s; %s, '
          'Pods are Running once bound; critical path %.1fs (network -> subnet, the cluster alongside -> node pool -> '
          'DaemonSets ready)\n' % (DATA_NETWORKS, GPU_NODES, MACHINE_TYPE, ' + '.join(DAEMONSETS), durations(args), critical))
    print('| run | wall s | x critical path | x ours | CPU s | Compute/Container requests | mutating | Kubernetes requests | mutating |')
    print('|---|---|---|---|---|---|---|---|---|')
    for row in rows + [rerun]:
        print('| %s | %.1f | %.2f | %.2f | %.1f | %d | %d | %d | %d |' % (
            row['name'], row['wall'], row['wall'] / critical, row['wall'] / ours['wall'], row['cpu'], row['cloud'], row['cloud_mutating'],
            row['kube'], row['kube_mutating']))
    print('\nRequests per resource (all / mutating):\n')
    print('| resource | %s |' % ' | '.join(row['name'].split(' (')[0] for row in rows + [rerun]))
    print('|---|' + '---|' * (len(rows) + 1))
    resources = sorted({resource for row in rows + [rerun] for resource, _mutating in row['by_resource']})
    for resource in resources:
        print('| %s | %s |' % (resource, ' | '.join('%d / %d' % (
            row['by_resource'][(resource, False)] + row['by_resource'][(resource, True)], row['by_resource'][(resource, True)])
            for row in rows + [rerun])))
    print('\nTargets: ours <= 1.5x critical path (%.2f: %s); rerun sends no mutating request (%d to Compute/Container, %d to '
          'Kubernetes: %s).' % (ours['wall'] / critical, 'met' if ours['wall'] <= 1.5 * critical else 'NOT met',
                                rerun['cloud_mutating'], rerun['kube_mutating'],
                                'met' if rerun['cloud_mutating'] + rerun['kube_mutating'] == 0 else 'NOT met'))
    for note in notes:
        print('Note: ' + note)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--latency', type=float, default=5.0, help='seconds every operation takes (default 5)')
    parser.add_argument('--cluster-latency', type=float,
                        help='seconds the cluster creation takes (default --latency; GKE takes minutes)')
    parser.add_argument('--node-pool-latency', type=float,
                        help='seconds the node pool creation takes (default --latency; GKE takes minutes)')
    parser.add_argument('--poll', type=float, default=1.0, help='seconds between the manual\'s `kubectl get pods` (default 1)')
    parser.add_argument('--logs', help='keep the playbook output and the manual\'s command log in this directory')
    parser.add_argument('--ours-only', action='store_true',
                        help='leave the manual out (ours and its rerun only: for profiling ours)')
    parser.add_argument('--no-token-cache', dest='token_cache', action='store_false',
                        help="leave gke-gcloud-auth-plugin's token cache empty (see seed_plugin_token_cache): the plugin then runs "
                        'gcloud on every Kubernetes client start')
    parser.add_argument('--profile', action='store_true',
                        help='print the per-task times of our first run (ansible.posix.profile_tasks, from the ansible wheel)')
    args = parser.parse_args()
    for name in ('cluster_latency', 'node_pool_latency'):
        if getattr(args, name) is None:
            setattr(args, name, args.latency)
    from sandbox.kube.gke import GkeClusters  # pylint: disable=import-outside-toplevel

    collections_path = collections_path_of_build(args.profile)
    work = pathlib.Path(args.logs or tempfile.mkdtemp(prefix='bench-gke-'))
    rows, notes = [], []
    sandbox = Sandbox(latency=args.latency).start()
    sandbox.operation_latency.update(CREATE_CLUSTER=args.cluster_latency, CREATE_NODE_POOL=args.node_pool_latency)
    sandbox.kube = GkeClusters()
    try:
        (work / 'ours').mkdir(parents=True)
        ours = Ours(sandbox, work / 'ours', collections_path, args.poll, args.profile, args.token_cache)
        rows.append(measure(ours, sandbox, OURS))
        if args.profile:
            notes.append('our first run, per task (profile_tasks):\n' + ours.log.read_text(encoding='utf-8').split('PLAY RECAP')[-1])
        version = sandbox.resources('container.clusters', project=OURS)[0]['currentMasterVersion']
        rerun = measure(ours, sandbox, OURS)
        rerun['name'] = 'rerun of ours'
        if not args.ours_only:
            (work / 'manual').mkdir()
            rows.append(measure(Manual(sandbox, work / 'manual', args.poll, version, args.token_cache), sandbox, MANUAL))
        for project in (OURS,) if args.ours_only else (OURS, MANUAL):
            ready = daemonsets_ready(sandbox, project)
            if any(count < GPU_NODES for count in ready.values()):
                notes.append('%s: DaemonSets not ready on every GPU node at the end: %s' % (project, ready))
        notes.append("gke-gcloud-auth-plugin's token cache seeded for both, as it is after a user's first call (--no-token-cache: "
                     'empty, the plugin runs gcloud on every Kubernetes client start)' if args.token_cache else
                     "gke-gcloud-auth-plugin's token cache left empty (--no-token-cache)")
        notes.append('the manual was left out (--ours-only)' if args.ours_only else
                     'the manual picks the version ours picked (%s); its get-server-config call is made as written' % version)
    finally:
        sandbox.stop()   # and its clusters
        shutil.rmtree(collections_path, ignore_errors=True)
        if not args.logs:
            shutil.rmtree(work, ignore_errors=True)
    print_report(args, rows, rerun, notes)


if __name__ == '__main__':
    main()

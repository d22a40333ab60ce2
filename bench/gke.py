"""GKE benchmark: our playbook against seed 003's manual sequence (gcloud + kubectl), side by side in one run.

    .venv/bin/python bench/gke.py [--latency 5] [--cluster-latency S] [--node-pool-latency S] [--poll 1]
                                  [--nodes 2 64 256] [--diagnose] [--ours-only] [--profile] [--logs DIR] [--no-token-cache]

Both contenders work in their own project of one local sandbox (tests/sandbox) whose operations take
--latency seconds and whose GKE clusters come alive as real Kubernetes control planes (tests/sandbox/kube:
kube-apiserver, controller manager, scheduler; kwok's Pods, Running as soon as they are bound):

- ours: `ansible-playbook playbooks/gke_a3mega.yml` (networks, cluster, node pool, then the
  gke_gpudirect role: Networks, GKENetworkParamSets, the TCPXO installer and NRI injector DaemonSets,
  each waited for; its NCCL test left out, like the manual's below);
- manual: seed 003's GPUDirect-TCPXO commands as the manual writes them, run by the real gcloud and
  kubectl 1.33: the network loop, get-server-config, the cluster, the Network/GKENetworkParamSet
  heredoc, the node pool, `kubectl apply -f` of the installer and the NRI injector (the vendored
  copies of the manual's URLs, tests/sandbox/kube/vendored.py), each DaemonSet's `kubectl get pods`
  repeated every --poll seconds until its Pods run on every GPU node, as a reader of the manual does.

Ours runs once per node pool size of --nodes (2 by default), each size in its own project (and so its own cluster,
whose control plane is stopped once that size is measured); the manual runs at the smallest size only. With
--diagnose, ours runs once more at each size with the NCCL test in diagnose mode, one GPU node marked slow through the
stand-in's fault annotation (STAND-IN OUTPUT: no NCCL runs; exec.py prints synthetic figures).

The critical path is the chain no tool can overlap: the networks (network -> subnet, two
operations) and, alongside them, the cluster (it needs none of the networks) -> node pool ->
DaemonSets ready, i.e. max(2 x latency, cluster latency) + node pool latency
(3 x latency when every operation takes --latency). --cluster-latency and
--node-pool-latency give those two Container operations their own duration (for example GKE's
minutes; the Compute operations keep --latency). The table gives each contender's wall time, its
ratio to the critical path and to ours, the CPU seconds and peak RSS of its processes, and its requests to the Compute/Container API and to the
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
from sandbox.kube import vendored  # noqa: E402  pylint: disable=wrong-import-position

MACHINE_TYPE, ACCELERATOR, DATA_NETWORKS = 'a3-megagpu-8g', 'nvidia-h100-mega-80gb', 8
REGION, ZONE, CLUSTER, POOL = 'us-central1', 'us-central1-a', 'a3mega', 'a3mega-gpu'
MANUAL = 'bench-manual'
DAEMONSETS = ('nccl-tcpxo-installer', 'device-injector')
MANIFESTS = ROOT / 'tests' / 'sandbox' / 'kube' / 'manifests'
# The manual's `kubectl apply -f URL`s, from the vendored copies (no network here; tests/sandbox/kube/vendored.py: the
# collection's copy, checked against the upstream file's SHA-256).
INSTALLER = pathlib.Path(vendored.path('gpudirect-tcpxo/nccl-tcpxo-installer.yaml'))
NRI_INJECTOR = pathlib.Path(vendored.path('nri_device_injector/nri-device-injector.yaml'))
NETWORK_OBJECTS = MANIFESTS / 'seeds' / '003-tcpxo-networks.yaml'   # the manual's heredoc, PROJECT_ID as written
MUTATING = ('POST', 'PATCH', 'PUT', 'DELETE')
SLOW_NODE = 'standin.aiinfra.gpudirect/slow-node'   # tests/sandbox/kube/exec.py FAULT_SLOW_NODE


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


def run_reaped(command, env, stdout):
    """Run ``command`` (its output to the file ``stdout``) and reap it with wait4: (exit status, CPU seconds (user +
    system), peak RSS in MiB) of the process and its waited-for descendants (ansible-playbook's workers and module
    processes). Linux's ru_maxrss of a reaped child is the largest RSS of the child or of any of its descendants, not
    their sum."""
    process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.STDOUT)  # pylint: disable=consider-using-with
    _pid, status, usage = os.wait4(process.pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0


class Usage:   # pylint: disable=too-few-public-methods
    """CPU seconds and peak RSS of a contender's processes, summed and maxed over its commands."""

    def __init__(self):
        self.cpu, self.rss = 0.0, 0.0

    def add(self, cpu, rss):
        self.cpu += cpu
        self.rss = max(self.rss, rss)


def must(command, env, log, usage, stdin=None):
    """Run ``command``, its stderr appended to ``log`` (a failure ends the benchmark with its tail); its CPU and RSS
    added to ``usage``; returns its stdout."""
    with open(log, 'a', encoding='utf-8') as handle:
        handle.write('$ %s\n' % ' '.join(command))
        handle.flush()
        with tempfile.TemporaryFile('w+') as err:
            feed = subprocess.PIPE if stdin is not None else subprocess.DEVNULL
            process = subprocess.Popen(command, env=env, stdin=feed, stdout=subprocess.PIPE, stderr=err, text=True)  # pylint: disable=consider-using-with
            if stdin is not None:   # small (a manifest): written whole before the output is read
                process.stdin.write(stdin)
                process.stdin.close()
            out = process.stdout.read()
            process.stdout.close()
            _pid, status, rusage = os.wait4(process.pid, 0)   # not wait(): its rusage is the measure
            returncode = os.waitstatus_to_exitcode(status)
            err.seek(0)
            handle.write(err.read())
        handle.write(out)
    usage.add(rusage.ru_utime + rusage.ru_stime, rusage.ru_maxrss / 1024.0)
    if returncode != 0:
        tail = pathlib.Path(log).read_text(encoding='utf-8')[-4000:]
        raise SystemExit('%s failed (exit %d); the end of %s:\n%s' % (' '.join(command[:5]), returncode, log, tail))
    return out


class Ours:
    """ansible-playbook playbooks/gke_a3mega.yml with a pool of ``nodes`` GPU nodes in project ``project``, the NCCL test
    left out (``diagnose``: on, in diagnose mode, its report in ``config``/report)."""

    name = 'ours (playbooks/gke_a3mega.yml)'

    def __init__(self, sandbox, config, collections_path, poll, nodes, profile=False, token_cache=True):
        self.project, self.nodes, self.config = 'bench-ours-%d' % nodes, nodes, config
        self.env = {key: value for key, value in tool_env(sandbox, self.project, config).items() if not key.startswith('ANSIBLE_')}
        if token_cache:   # ours never writes $KUBECONFIG (config/kubeconfig): its own kubeconfig is gpudirect_kubeconfig_path
            seed_plugin_token_cache(config, '')
        self.env.update(GCP_PROJECT=self.project, GCP_AUTH_KIND='accesstoken', GCP_ACCESS_TOKEN='sandbox-token',
                        ANSIBLE_COLLECTIONS_PATH=str(collections_path), ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='False')
        self.profile_env = dict(self.env, ANSIBLE_CALLBACKS_ENABLED='ansible.posix.profile_tasks', PROFILE_TASKS_TASK_OUTPUT_LIMIT='40')
        self.profile = profile
        self.extra = {'gpudirect_project': self.project, 'gpudirect_location': ZONE, 'gpudirect_cluster': CLUSTER,
                      'gpudirect_node_pool': POOL, 'gpudirect_network_prefix': self.project, 'gpudirect_node_count': nodes,
                      'gpudirect_kubeconfig_path': str(config / 'ours-kubeconfig'), 'gke_gpudirect_nccl_test': False,
                      # The role's waits poll as often as the manual's reader (its default, 5 s, suits real clusters).
                      'gke_gpudirect_wait_delay': max(1, round(poll))}
        self.log = config / 'playbook.log'
        self.diagnose_log = config / 'diagnose.log'
        self.report = config / 'report'

    def command(self, extra):
        return [str(pathlib.Path(sys.executable).parent / 'ansible-playbook'), '-i', str(ROOT / 'inventories' / 'sandbox' / 'hosts.yml'),
                str(ROOT / 'playbooks' / 'gke_a3mega.yml'), '-e', json.dumps(extra)]

    def __call__(self, diagnose=False):
        """One run: -> Usage of ansible-playbook's process tree. The first run of a size (and --profile) adds
        profile_tasks; so does a diagnosis (its per-round times are read from profile_tasks' timestamps)."""
        first = not self.log.exists()
        extra = dict(self.extra, gke_gpudirect_nccl_test=True, gke_gpudirect_nccl_test_mode='diagnose',
                     gke_gpudirect_report_dir=str(self.report), gke_gpudirect_nccl_fail_on_verdict=False) if diagnose else self.extra
        env = self.profile_env if diagnose or (self.profile and first) else self.env
        log_path = self.diagnose_log if diagnose else self.log
        progress('ours at %d nodes%s: ansible-playbook (output in %s)' % (self.nodes, ', diagnose' if diagnose else '', log_path))
        command = self.command(extra)
        with open(log_path, 'a', encoding='utf-8') as log:
            log.write('$ %s\n' % ' '.join(command))
            log.flush()
            returncode, cpu, rss = run_reaped(command, env, log)
        if returncode != 0:
            tail = log_path.read_text(encoding='utf-8')[-4000:]
            raise SystemExit('our playbook failed (exit %d); the end of %s:\n%s' % (returncode, log_path, tail))
        usage = Usage()
        usage.add(cpu, rss)
        return usage


class Manual:
    """Seed 003's GPUDirect-TCPXO sequence, command by command (see the module docstring), with a pool of ``nodes``."""

    name = 'manual (seed 003: gcloud + kubectl)'

    def __init__(self, sandbox, config, poll, version, nodes, token_cache=True):
        self.project, self.nodes = MANUAL, nodes
        self.env, self.poll, self.version = tool_env(sandbox, MANUAL, config), poll, version
        if token_cache:   # get-credentials writes $KUBECONFIG with the current context gke_PROJECT_LOCATION_CLUSTER
            seed_plugin_token_cache(config, 'gke_%s_%s_%s' % (MANUAL, ZONE, CLUSTER))
        self.log = config / 'commands.log'
        self.usage = Usage()

    def gcloud(self, *args):
        return must(['gcloud', *args], self.env, self.log, self.usage)

    def kubectl(self, *args, stdin=None):
        return must([str(sdk_bin() / 'kubectl.1.33'), *args], self.env, self.log, self.usage, stdin=stdin)

    def wait_running(self, label):
        """`kubectl get pods -n=kube-system -l=name=LABEL` until every GPU node's Pod is 1/1 Running."""
        while True:
            rows = self.kubectl('get', 'pods', '-n=kube-system', '-l=name=' + label).splitlines()[1:]
            if len([row for row in rows if re.search(r'\s1/1\s+Running\s', row)]) >= self.nodes:
                return
            time.sleep(self.poll)

    def __call__(self):
        project = MANUAL   # the manual names the networks PROJECT_ID-net-N
        self.usage = Usage()
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
                    '--machine-type=' + MACHINE_TYPE, '--num-nodes=%d' % self.nodes,
                    *['--additional-node-network=network=%s-net-%d,subnetwork=%s-sub-%d' % (project, n, project, n)
                      for n in range(1, DATA_NETWORKS + 1)],
                    '--enable-gvnic', '--no-enable-autoupgrade', '--scopes', 'https://www.googleapis.com/auth/cloud-platform')
        self.kubectl('get', 'nodes')
        self.kubectl('apply', '-f', str(INSTALLER))
        self.wait_running('nccl-tcpxo-installer')
        self.kubectl('apply', '-f', str(NRI_INJECTOR))
        self.wait_running('device-injector')
        return self.usage


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


def cluster_key(project):
    return 'projects/%s/locations/%s/clusters/%s' % (project, ZONE, CLUSTER)


def measure(contender, sandbox, name=None, **kwargs):
    project = contender.project
    cloud_before, kube_before = len(cloud_log(sandbox, project)), len(kube_log(sandbox, project))
    start = time.monotonic()
    usage = contender(**kwargs)
    wall = time.monotonic() - start
    cloud, kube = cloud_log(sandbox, project)[cloud_before:], kube_log(sandbox, project)[kube_before:]
    if getattr(contender, 'config', None) is not None:   # the run's requests beside its output, to read by path
        with open(contender.config / 'requests.log', 'a', encoding='utf-8') as handle:
            handle.write('# %s\n' % (name or contender.name))
            handle.writelines('%s %s\n' % (entry['method'], entry['path']) for entry in cloud)
            handle.writelines('%s %s\n' % (entry[0], entry[1]) for entry in kube)
    return {'name': name or contender.name, 'nodes': contender.nodes, 'wall': wall, 'cpu': usage.cpu, 'rss': usage.rss,
            'cloud': len(cloud), 'cloud_mutating': sum(1 for e in cloud if e['method'] in MUTATING),
            'kube': len(kube), 'kube_mutating': sum(1 for e in kube if e[0] in MUTATING), 'by_resource': requests_by_resource(cloud, kube)}


def daemonsets_ready(sandbox, project):
    kube = sandbox.kube.cluster(cluster_key(project))
    ready = {}
    for name in DAEMONSETS:
        found = kube.store.get('daemonsets.apps', name, 'kube-system') if kube else None
        ready[name] = (found or {}).get('status', {}).get('numberReady', 0)
    return ready


def stop_cluster(sandbox, project):
    """Take the project's cluster out of the Container API sandbox's store, so its control plane (kube-apiserver, controller
    manager, scheduler, kwok for its nodes) stops and the next size runs without it (as a cluster deleted on GKE)."""
    key = cluster_key(project)
    with sandbox.store.lock:
        for pool_key, _pool in list(sandbox.store.items('container.nodePools', key + '/nodePools/')):
            sandbox.store.delete('container.nodePools', pool_key)
        sandbox.store.delete('container.clusters', key)
        sandbox.kube.sync(sandbox.store)


# ----- the diagnosis (STAND-IN OUTPUT) ---------------------------------------------------------------

def mark_slow_node(sandbox, project):
    """The stand-in's fault annotation on one GPU node (the middle one by name): -> its name."""
    store = sandbox.kube.cluster(cluster_key(project)).store
    nodes = sorted(node['metadata']['name'] for node in store.list('nodes', label_selector='cloud.google.com/gke-nodepool=' + POOL))
    bad = nodes[len(nodes) // 2]
    for _attempt in range(20):
        node = store.get('nodes', bad)
        node['metadata'].setdefault('annotations', {})[SLOW_NODE] = 'true'
        try:
            store.update(node)
            return bad
        except Exception as error:  # pylint: disable=broad-exception-caught
            if getattr(error, 'code', None) != 409:
                raise
    raise SystemExit('could not annotate node %s' % bad)


TASK_LINE = re.compile(r'^TASK \[(.*)\]')
ELAPSED = re.compile(r'\(\d+:\d+:[\d.]+\)\s+(\d+):(\d+):([\d.]+)\s*\**\s*$')


def task_starts(log_text):
    """[(task name, seconds since the run's start when it started)] from profile_tasks' line under each TASK header."""
    found, name = [], None
    for line in log_text.splitlines():
        header = TASK_LINE.match(line)
        if header:
            name = header.group(1)
            continue
        elapsed = ELAPSED.search(line)
        if elapsed and name is not None:
            found.append((name, int(elapsed.group(1)) * 3600 + int(elapsed.group(2)) * 60 + float(elapsed.group(3))))
            name = None
    return found


def round_times(log_text):
    """Seconds of each diagnosis round that ran pairs: from the start of its "Run the round's pairs at once" task to the start
    of the task after its "Keep the plan of the next round"."""
    starts = task_starts(log_text)
    times, begun = [], None
    for index, (name, at) in enumerate(starts):
        if "Run the round's pairs at once (" in name and not name.endswith('()'):
            begun = at
        elif 'Keep the plan of the next round' in name and begun is not None and index + 1 < len(starts):
            times.append(starts[index + 1][1] - begun)
            begun = None
    return times


def diagnose(ours, sandbox):
    bad = mark_slow_node(sandbox, ours.project)
    row = measure(ours, sandbox, name='ours, NCCL diagnose mode (STAND-IN OUTPUT)', diagnose=True)
    with open(ours.report / 'report.json', encoding='utf-8') as handle:
        report = json.load(handle)
    row.update(bad=bad, named=report['bad_hosts'], suspect=report['suspect_hosts'], rounds=report['rounds'],
               host_rounds=report['host_rounds'], runs=collections.Counter(pair.get('round') for pair in report['pairs']),
               round_times=round_times(ours.diagnose_log.read_text(encoding='utf-8')))
    return row


# ----- report ---------------------------------------------------------------------------------------

def critical_path(args):
    """network -> subnet, and the cluster alongside them -> node pool -> DaemonSets ready (seconds)."""
    return max(2 * args.latency, args.cluster_latency) + args.node_pool_latency


def durations(args):
    if args.cluster_latency == args.node_pool_latency == args.latency:
        return 'every operation takes %.1fs' % args.latency
    return 'Compute operations take %.1fs, the cluster creation %.1fs, the node pool creation %.1fs' % (
        args.latency, args.cluster_latency, args.node_pool_latency)


def print_report(args, rows, diagnoses, notes):
    critical = critical_path(args)
    ours = {row['nodes']: row for row in rows if row['name'].startswith('ours (')}
    reruns = {row['nodes']: row for row in rows if row['name'] == 'rerun of ours'}
    load = ' '.join('%.1f' % value for value in os.getloadavg())
    print('Seed 003 TCPXO: %d networks, cluster, %s-node %s pool, Networks + GKENetworkParamSets, %s; %s, '
          'Pods are Running once bound; critical path %.1fs (network -> subnet, the cluster alongside -> node pool -> '
          'DaemonSets ready); load average at the end %s\n' % (
              DATA_NETWORKS, ' / '.join(map(str, sorted(ours))), MACHINE_TYPE, ' + '.join(DAEMONSETS), durations(args), critical, load))
    print('| run | nodes | wall s | x critical path | s beyond it | x ours | CPU s | peak RSS MiB | Compute/Container requests | mutating '
          '| Kubernetes requests | mutating | Kubernetes requests per node |')
    print('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
    for row in rows:
        print('| %s | %d | %.1f | %.2f | %.1f | %.2f | %.1f | %.0f | %d | %d | %d | %d | %.2f |' % (
            row['name'], row['nodes'], row['wall'], row['wall'] / critical, row['wall'] - critical, row['wall'] / ours[row['nodes']]['wall'],
            row['cpu'], row['rss'], row['cloud'], row['cloud_mutating'], row['kube'], row['kube_mutating'], row['kube'] / row['nodes']))
    print('\nRequests per resource (all / mutating):\n')
    print('| resource | %s |' % ' | '.join('%s, %d' % (row['name'].split(' (')[0], row['nodes']) for row in rows))
    print('|---|' + '---|' * len(rows))
    resources = sorted({resource for row in rows for resource, _mutating in row['by_resource']})
    for resource in resources:
        print('| %s | %s |' % (resource, ' | '.join('%d / %d' % (
            row['by_resource'][(resource, False)] + row['by_resource'][(resource, True)], row['by_resource'][(resource, True)])
            for row in rows)))
    if diagnoses:
        print('\nNCCL diagnose mode, one GPU node marked slow (STAND-IN OUTPUT: no NCCL runs, the stand-in prints synthetic '
              'figures; a round here is seconds, on real nodes one NCCL sweep, minutes):\n')
        print('| nodes | bad node | named bad | suspect | rounds (host rounds) | runs per round | s per round | wall s | CPU s | peak RSS MiB '
              '| Kubernetes requests |')
        print('|---|---|---|---|---|---|---|---|---|---|---|')
        for row in diagnoses:
            print('| %d | %s | %s | %s | %d (%d) | %s | %s | %.1f | %.1f | %.0f | %d |' % (
                row['nodes'], row['bad'], ', '.join(row['named']) or 'none', ', '.join(row['suspect']) or 'none', row['rounds'],
                row['host_rounds'], ', '.join(str(row['runs'][key]) for key in sorted(row['runs'])),
                ', '.join('%.1f' % value for value in row['round_times']), row['wall'], row['cpu'], row['rss'], row['kube']))
    small, large = ours[min(ours)], ours[max(ours)]
    print('\nTargets (ours):')
    for nodes, row in sorted(ours.items()):
        print('- %d nodes within 1.5x of the critical path: %.2fx (%s)' % (nodes, row['wall'] / critical, verdict(row['wall'] <= 1.5 * critical)))
    if len(ours) > 1:
        growth = large['wall'] - small['wall']
        print('- time beyond the critical path flat in the node count: %.1fs at %d nodes, %.1fs at %d (%+.1fs; met when at most +1.0s, '
              'the noise of one run on this shared machine) (%s); CPU s %s' % (
                  small['wall'] - critical, small['nodes'], large['wall'] - critical, large['nodes'], growth, verdict(growth <= 1.0),
                  ', '.join('%.1f at %d' % (row['cpu'], nodes) for nodes, row in sorted(ours.items()))))
        per_node = [row['kube'] / nodes for nodes, row in sorted(ours.items())]
        print('- Kubernetes requests per node falling with N: %s (%s)' % (
            ', '.join('%.2f at %d' % (value, nodes) for value, nodes in zip(per_node, sorted(ours))),
            verdict(all(later < earlier for earlier, later in zip(per_node, per_node[1:])))))
    writes = ['%d + %d at %d nodes' % (row['cloud_mutating'], row['kube_mutating'], nodes) for nodes, row in sorted(reruns.items())]
    print('- rerun sends no mutating request (Compute/Container + Kubernetes): %s (%s)' % (
        ', '.join(writes), verdict(not any(row['cloud_mutating'] + row['kube_mutating'] for row in reruns.values()))))
    for row in diagnoses:
        print('- diagnosis at %d nodes: %d host rounds (at most 3 with one bad host: %s), %s named (%s)' % (
            row['nodes'], row['host_rounds'], verdict(row['host_rounds'] <= 3), ', '.join(row['named']) or 'none',
            verdict(row['named'] == [row['bad']] and not row['suspect'])))
    for note in notes:
        print('Note: ' + note)


def verdict(met):
    return 'met' if met else 'NOT met'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--latency', type=float, default=5.0, help='seconds every operation takes (default 5)')
    parser.add_argument('--cluster-latency', type=float,
                        help='seconds the cluster creation takes (default --latency; GKE takes minutes)')
    parser.add_argument('--node-pool-latency', type=float,
                        help='seconds the node pool creation takes (default --latency; GKE takes minutes)')
    parser.add_argument('--poll', type=float, default=1.0, help='seconds between the manual\'s `kubectl get pods` (default 1)')
    parser.add_argument('--nodes', type=int, nargs='+', default=[2],
                        help='GPU node pool sizes, each in its own project (default 2); the manual runs at the smallest only')
    parser.add_argument('--diagnose', action='store_true',
                        help='also run ours at each size with the NCCL test in diagnose mode, one node marked slow (stand-in output)')
    parser.add_argument('--logs', help='keep the playbook output and the manual\'s command log in this directory')
    parser.add_argument('--ours-only', action='store_true',
                        help='leave the manual out (ours and its rerun only: for profiling ours)')
    parser.add_argument('--no-token-cache', dest='token_cache', action='store_false',
                        help="leave gke-gcloud-auth-plugin's token cache empty (see seed_plugin_token_cache): the plugin then runs "
                        'gcloud on every Kubernetes client start')
    parser.add_argument('--profile', action='store_true',
                        help='print the per-task times of our first run at each size (ansible.posix.profile_tasks, from the ansible wheel)')
    args = parser.parse_args()
    if min(args.nodes) < 1 or (args.diagnose and min(args.nodes) < 2):
        raise SystemExit('--nodes: give sizes of 1 or more (2 or more with --diagnose, which pairs nodes)')
    for name in ('cluster_latency', 'node_pool_latency'):
        if getattr(args, name) is None:
            setattr(args, name, args.latency)
    from sandbox.kube.gke import GkeClusters  # pylint: disable=import-outside-toplevel

    collections_path = collections_path_of_build(True)   # profile_tasks: --profile and the diagnosis's round times
    work = pathlib.Path(args.logs or tempfile.mkdtemp(prefix='bench-gke-'))
    rows, diagnoses, notes = [], [], []
    sandbox = Sandbox(latency=args.latency).start()
    sandbox.operation_latency.update(CREATE_CLUSTER=args.cluster_latency, CREATE_NODE_POOL=args.node_pool_latency)
    sandbox.kube = GkeClusters()
    version = None
    try:
        for nodes in sorted(set(args.nodes)):
            (work / ('ours-%d' % nodes)).mkdir(parents=True)
            ours = Ours(sandbox, work / ('ours-%d' % nodes), collections_path, args.poll, nodes, args.profile, args.token_cache)
            rows.append(measure(ours, sandbox))
            if args.profile:
                notes.append('our first run at %d nodes, per task (profile_tasks):\n%s' % (
                    nodes, ours.log.read_text(encoding='utf-8').split('PLAY RECAP')[-1]))
            version = version or sandbox.resources('container.clusters', project=ours.project)[0]['currentMasterVersion']
            ready = daemonsets_ready(sandbox, ours.project)
            if any(count < nodes for count in ready.values()):
                notes.append('%s: DaemonSets not ready on every GPU node after the first run: %s' % (ours.project, ready))
            rows.append(measure(ours, sandbox, name='rerun of ours'))
            if args.diagnose:
                diagnoses.append(diagnose(ours, sandbox))
            stop_cluster(sandbox, ours.project)
        if not args.ours_only:
            (work / 'manual').mkdir()
            manual = Manual(sandbox, work / 'manual', args.poll, version, min(args.nodes), args.token_cache)
            rows.append(measure(manual, sandbox))
            ready = daemonsets_ready(sandbox, MANUAL)
            if any(count < manual.nodes for count in ready.values()):
                notes.append('%s: DaemonSets not ready on every GPU node at the end: %s' % (MANUAL, ready))
        notes.append("gke-gcloud-auth-plugin's token cache seeded for both, as it is after a user's first call (--no-token-cache: "
                     'empty, the plugin runs gcloud on every Kubernetes client start)' if args.token_cache else
                     "gke-gcloud-auth-plugin's token cache left empty (--no-token-cache)")
        notes.append('the manual was left out (--ours-only)' if args.ours_only else
                     'the manual runs at %d nodes only and picks the version ours picked (%s); its get-server-config call is '
                     'made as written' % (min(args.nodes), version))
        notes.append('CPU s and peak RSS: ansible-playbook with its workers and module processes (wait4 rusage of its tree; the '
                     "manual: the sum of its commands' CPU, the largest RSS of any); the sandbox and the control planes are not counted")
    finally:
        sandbox.stop()   # and its clusters
        shutil.rmtree(collections_path, ignore_errors=True)
        if not args.logs:
            shutil.rmtree(work, ignore_errors=True)
    print_report(args, rows, diagnoses, notes)


if __name__ == '__main__':
    main()

"""Provisioning benchmark: a GPUDirect fabric plus N A3 Mega VMs, for several N, side by side in one run.

    .venv/bin/python bench/provision.py [--latency 2] [--nodes 16 64 [256 ...]] [--others-nodes N ...] [--gcloud-seed]
                                        [--skip-google-cloud] [--profile] [--logs DIR] [--ours-only] [--module-process]

Every contender works in its own project (one per contender and VM count) of one local sandbox
(tests/sandbox) whose operations take --latency seconds, so the API is equally slow for all of them:

- ours: `ansible-playbook playbooks/a3mega.yml` (modules gce_gpudirect_network and gce_gpudirect_instance;
  two or more new VMs of a zone go in one instances.bulkInsert);
- gcloud bulk: seed 000's network commands, then one `gcloud compute instances bulk create` for the VMs;
- gcloud seed (with --gcloud-seed): seed 000's command sequence as the manual gives it (network loop, then one
  `gcloud compute instances create` per VM): minutes per 16 VMs, so it is asked for;
- google.cloud: the same resources with the google.cloud collection's modules, run through the
  sandbox's HTTPS proxy mode since those modules cannot be pointed at another endpoint (standard
  VMs: the collection cannot express the seed's provisioning models). Skipped, and said so, when
  the proxy mode or the collection is not available.

The critical path is the chain of operations no tool can overlap: network -> subnet -> instance,
three operations. The table gives each contender's wall time, its ratio to the critical path, the time
beyond it, its ratio to ours, what it cost the controller (CPU seconds and peak RSS of its processes, by wait4:
bench/_process.py) and the API requests it made (per VM, and on a rerun of ours). The other contenders run at the
counts of --others-nodes (default: those up to 64); at larger counts their figures are extrapolated, labelled so.
Past 252 VMs the subnets are wider than the manual's /24 (subnet_ranges), the same for every contender.
"""

import argparse
import collections
import ipaddress
import json
import math
import os
import pathlib
import shutil
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get('GPUDIRECT_BUILD', str(ROOT / 'build')))
sys.path.insert(0, str(ROOT / 'tests'))
sys.path.insert(0, str(ROOT / 'bench'))

from sandbox import Sandbox  # noqa: E402  pylint: disable=wrong-import-position
from _bench_collections import collections_dir  # noqa: E402  pylint: disable=wrong-import-position
import _process  # noqa: E402  pylint: disable=wrong-import-position

FAMILY, PLAYBOOK, DATA_NETWORKS = 'a3-megagpu-8g', 'a3mega.yml', 8
REGION, ZONE, PREFIX = 'us-central1', 'us-central1-a', 'bench'
MUTATING = ('POST', 'PATCH', 'PUT', 'DELETE')
MODULE_PROCESS = 'ours before: API modules as module processes'
# The manual's ranges (192.168.N.0/24: 252 usable addresses, Google keeps 4 of each subnet) while the VMs fit them.
MANUAL_PREFIX_LENGTH = 24


def subnet_ranges(nodes):
    """Management then data subnet ranges for ``nodes`` VMs: the manual's 192.168.N.0/24 while 252 addresses do, else
    the smallest equal blocks inside 192.168.0.0/16 that do (Google keeps 4 addresses of each subnet)."""
    length = min(MANUAL_PREFIX_LENGTH, 32 - math.ceil(math.log2(nodes + 4)))
    blocks = ipaddress.ip_network('192.168.0.0/16').subnets(new_prefix=length)
    return [str(next(blocks)) for _index in range(DATA_NETWORKS + 1)]


class Ours:
    """ansible-playbook playbooks/a3mega.yml; with ``profile``, ansible.posix.profile_tasks's per-task times in its output,
    which goes to ``logs`` (a directory) when given."""

    def __init__(self, profile=False, logs=None, module_process=False):
        self.profile, self.logs, self.outputs, self.module_process = profile, logs, [], module_process

    def __call__(self, sandbox, project, nodes, collections_path, usage=None):
        env = {key: value for key, value in os.environ.items() if not key.startswith(('GCP_', 'CLOUDSDK_', 'ANSIBLE_'))}
        env.update(GCP_AUTH_KIND='none', GCP_PROJECT=project, CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE=sandbox.compute_url,
                   ANSIBLE_COLLECTIONS_PATH=str(collections_path), ANSIBLE_NOCOLOR='1')
        if self.module_process:   # the way every module ran before plugins/plugin_utils/module_in_worker.py
            env.update(ANSIBLE_GPUDIRECT_MODULE_PROCESS='1')
        if self.profile:   # per-task times at the end of the output, all of them
            env.update(ANSIBLE_CALLBACKS_ENABLED='ansible.posix.profile_tasks', PROFILE_TASKS_TASK_OUTPUT_LIMIT='all')
        extra = {'gpudirect_project': project, 'gpudirect_zone': ZONE, 'gpudirect_network_prefix': PREFIX, 'gpudirect_node_count': nodes}
        ranges = subnet_ranges(nodes)
        if not ranges[0].endswith('/%d' % MANUAL_PREFIX_LENGTH):   # beyond the manual's /24: the role's range variables
            extra.update(gce_network_management_cidr=ranges[0], gce_network_data_cidrs=ranges[1:])
        command = [str(pathlib.Path(sys.executable).parent / 'ansible-playbook'), '-i', str(ROOT / 'inventories' / 'sandbox'),
                   str(ROOT / 'playbooks' / PLAYBOOK), '-e', json.dumps(extra)]
        result = _process.run(command, env, usage)
        self.outputs.append((project, nodes, result.stdout))
        if self.logs:
            run = sum(1 for output in self.outputs if output[0] == project)
            (pathlib.Path(self.logs) / ('%s-run%d.log' % (project, run))).write_text(result.stdout + result.stderr, encoding='utf-8')
        if result.returncode != 0:
            raise SystemExit('our playbook failed:\n' + result.stdout[-3000:])


def gcloud_env(sandbox, project, config):
    env = {key: value for key, value in os.environ.items() if not key.startswith('CLOUDSDK_')}
    env.update(CLOUDSDK_CONFIG=config, CLOUDSDK_CORE_PROJECT=project, CLOUDSDK_AUTH_DISABLE_CREDENTIALS='True',
               CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE=sandbox.compute_url, CLOUDSDK_CORE_DISABLE_PROMPTS='1',
               CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK='True', CLOUDSDK_CORE_CHECK_GCE_METADATA='False')
    return env


def gcloud_runner(sandbox, project, usage):
    config = tempfile.mkdtemp(prefix='bench-gcloud-')
    env = gcloud_env(sandbox, project, config)

    def gcloud(*args):
        result = _process.run(['gcloud', *args], env, usage)
        # bulk create prints a refusal as an ERROR line and exits 0.
        if result.returncode != 0 or 'ERROR:' in result.stderr:
            raise SystemExit('gcloud %s failed:\n%s' % (' '.join(args), result.stderr))
    return gcloud, config


# The seed's flags of every VM, and its NICs: management with an external address, data without.
VM_FLAGS = ('--zone=' + ZONE, '--machine-type=' + FAMILY, '--maintenance-policy=TERMINATE', '--restart-on-failure',
            '--image-family=cos-121-lts', '--image-project=cos-cloud', '--boot-disk-size=200',
            '--metadata=cos-update-strategy=update_disabled', '--scopes=https://www.googleapis.com/auth/cloud-platform',
            '--network-interface=nic-type=GVNIC,network=%s-mgmt-net,subnet=%s-mgmt-sub' % (PREFIX, PREFIX),
            *['--network-interface=nic-type=GVNIC,network=%s-data-net-%d,subnet=%s-data-sub-%d,no-address' % (PREFIX, n, PREFIX, n)
              for n in range(1, DATA_NETWORKS + 1)])


def run_gcloud_seed(sandbox, project, nodes, _collections_path, usage):
    """Seed 000's commands in the manual's order: the management network, the data loop, then each VM."""
    gcloud, config = gcloud_runner(sandbox, project, usage)
    gcloud_fabric(gcloud, nodes)
    for index in range(1, nodes + 1):
        gcloud('compute', 'instances', 'create', '%s-vm-%d' % (PREFIX, index), *VM_FLAGS)
    shutil.rmtree(config, ignore_errors=True)


def run_gcloud_bulk(sandbox, project, nodes, _collections_path, usage):
    """The seed's network commands, then all VMs in one `gcloud compute instances bulk create`."""
    gcloud, config = gcloud_runner(sandbox, project, usage)
    gcloud_fabric(gcloud, nodes)
    gcloud('compute', 'instances', 'bulk', 'create', '--name-pattern=%s-vm-#' % PREFIX, '--count=%d' % nodes, *VM_FLAGS)
    shutil.rmtree(config, ignore_errors=True)


def gcloud_fabric(gcloud, nodes):
    ranges = subnet_ranges(nodes)
    mgmt = PREFIX + '-mgmt-net'
    gcloud('compute', 'networks', 'create', mgmt, '--subnet-mode=custom', '--mtu=8244')
    gcloud('compute', 'networks', 'subnets', 'create', PREFIX + '-mgmt-sub', '--network=' + mgmt, '--region=' + REGION,
           '--range=' + ranges[0])
    gcloud('compute', 'firewall-rules', 'create', PREFIX + '-mgmt-internal', '--network=' + mgmt, '--action=ALLOW',
           '--rules=tcp:0-65535,udp:0-65535,icmp', '--source-ranges=192.168.0.0/16')
    gcloud('compute', 'firewall-rules', 'create', PREFIX + '-mgmt-external-ssh', '--network=' + mgmt, '--action=ALLOW',
           '--rules=tcp:22', '--source-ranges=203.0.113.0/24')
    gcloud('compute', 'firewall-rules', 'create', PREFIX + '-mgmt-external-ping', '--network=' + mgmt, '--action=ALLOW',
           '--rules=icmp', '--source-ranges=0.0.0.0/0')
    for n in range(1, DATA_NETWORKS + 1):
        net = '%s-data-net-%d' % (PREFIX, n)
        gcloud('compute', 'networks', 'create', net, '--subnet-mode=custom', '--mtu=8244')
        gcloud('compute', 'networks', 'subnets', 'create', '%s-data-sub-%d' % (PREFIX, n), '--network=' + net, '--region=' + REGION,
               '--range=' + ranges[n])
        gcloud('compute', 'firewall-rules', 'create', '%s-data-internal-%d' % (PREFIX, n), '--network=' + net, '--action=ALLOW',
               '--rules=tcp:0-65535,udp:0-65535,icmp', '--source-ranges=192.168.0.0/16')


def google_cloud_runner():
    """The google.cloud contender, or the reason it cannot run here."""
    try:
        import google_cloud_bench  # pylint: disable=import-outside-toplevel
    except ImportError as exc:
        return None, 'google.cloud run skipped: %s' % exc

    def run(sandbox, project, nodes, collections_path, usage):
        google_cloud_bench.run(sandbox, project, nodes, collections_path, usage, subnet_ranges(nodes))
    return run, None


def project_log(sandbox, project):
    marker = '/projects/%s/' % project
    return [entry for entry in sandbox.request_log() if marker in entry['path']]


def measure(name, function, sandbox, project, nodes, collections_path):
    # CPU seconds and peak RSS of the contender's processes (bench/_process.py; the sandbox runs in this process, so
    # its share is not counted): what the run costs the controller whatever the machine's load.
    usage = _process.Usage()
    start = time.monotonic()
    function(sandbox, project, nodes, collections_path, usage)
    wall = time.monotonic() - start
    log = project_log(sandbox, project)
    created = collections.Counter(collection for collection in ('compute.networks', 'compute.subnetworks', 'compute.firewalls',
                                                                'compute.instances')
                                  for _item in sandbox.resources(collection, project=project))
    return {'name': name, 'nodes': nodes, 'wall': wall, 'cpu': usage.cpu_s, 'rss': usage.peak_rss_mib, 'requests': len(log),
            'mutating': sum(1 for e in log if e['method'] in MUTATING),
            # VM work is zonal (inserts, their operations) plus instance lists.
            'vm_requests': sum(1 for e in log if '/zones/' in e['path'] or '/aggregated/instances' in e['path']),
            'created': dict(created)}


def extrapolate(rows, name, nodes):
    """A row for ``name`` at ``nodes`` VMs, linear in the VM count through its two largest measured counts (each figure
    a + b * N), labelled so; None when it was measured at fewer than two counts."""
    measured = sorted((row for row in rows if row['name'] == name and not row.get('extrapolated')), key=lambda row: row['nodes'])
    if len(measured) < 2:
        return None
    low, high = measured[-2:]
    row = {'name': name, 'nodes': nodes, 'extrapolated': (low['nodes'], high['nodes']), 'created': {}}
    for key in ('wall', 'cpu', 'rss', 'requests', 'mutating', 'vm_requests'):
        slope = (high[key] - low[key]) / (high['nodes'] - low['nodes'])
        row[key] = high[key] + slope * (nodes - high['nodes'])
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--latency', type=float, default=2.0, help='seconds every operation takes (default 2)')
    parser.add_argument('--nodes', type=int, nargs='+', default=[16, 64], help='A3 Mega VM counts to measure, each in its own projects '
                        '(default 16 64)')
    parser.add_argument('--others-nodes', type=int, nargs='+', metavar='N',
                        help='the VM counts the other contenders run at (default: those of --nodes up to 64); at the other counts '
                        'of --nodes their figures are extrapolated from their two largest counts, and labelled so')
    parser.add_argument('--gcloud-seed', action='store_true', help="also run seed 000's one-create-per-VM gcloud sequence (slow)")
    parser.add_argument('--skip-google-cloud', action='store_true', help='leave out the google.cloud contender')
    parser.add_argument('--profile', action='store_true',
                        help="print the per-task times of ours' first run at each count (ansible.posix.profile_tasks, from the ansible wheel)")
    parser.add_argument('--ours-only', action='store_true', help='leave out every other contender (to profile ours)')
    parser.add_argument('--module-process', action='store_true',
                        help='also run ours with its API modules as module processes (ANSIBLE_GPUDIRECT_MODULE_PROCESS=1), as they '
                        'ran before they ran in the worker (plugins/plugin_utils/module_in_worker.py)')
    parser.add_argument('--logs', metavar='DIR', help="keep the output of each of ours' runs in DIR")
    args = parser.parse_args()
    if shutil.which('gcloud') is None:
        raise SystemExit('gcloud is not on PATH')
    if args.logs:
        pathlib.Path(args.logs).mkdir(parents=True, exist_ok=True)
    others_nodes = args.others_nodes or [nodes for nodes in args.nodes if nodes <= 64] or [min(args.nodes)]
    collections_path = collections_dir({('aiinfra', 'gpudirect'): ROOT}, args.profile)
    run_ours = Ours(args.profile, args.logs)
    rows, reruns, notes = [], [], []
    runner, reason = (None, 'google.cloud run skipped (--skip-google-cloud)') if args.skip_google_cloud else google_cloud_runner()
    if reason:
        notes.append(reason)
    contenders = [('gcloud bulk create', run_gcloud_bulk)] + ([('gcloud (seed 000 sequence)', run_gcloud_seed)] if args.gcloud_seed else [])
    contenders += [('google.cloud modules', runner)] if runner else []
    if args.ours_only:
        contenders, notes = [], ['other contenders left out (--ours-only)']
    with Sandbox(latency=args.latency).start() as sandbox:
        # Ours at every count first, back to back, so that the counts meet about the same load.
        for nodes in args.nodes:
            project = 'bench-ours-%d' % nodes
            rows.append(measure('ours (playbooks/a3mega.yml)', run_ours, sandbox, project, nodes, collections_path))
            before, rerun_start, rerun_usage = len(project_log(sandbox, project)), time.monotonic(), _process.Usage()
            run_ours(sandbox, project, nodes, collections_path, rerun_usage)
            reruns.append((nodes, time.monotonic() - rerun_start, project_log(sandbox, project)[before:], rerun_usage))
            if args.module_process:
                rows.append(measure(MODULE_PROCESS, Ours(module_process=True), sandbox, 'bench-process-%d' % nodes, nodes,
                                    collections_path))
        for nodes in others_nodes:
            for name, function in contenders:
                project = 'bench-%s-%d' % ('seed' if name.startswith('gcloud (seed') else name.split()[0].replace('.', '-'), nodes)
                rows.append(measure(name, function, sandbox, project, nodes, collections_path))
    for nodes in args.nodes:
        for name, _function in contenders if nodes not in others_nodes else []:
            row = extrapolate(rows, name, nodes)
            if row:
                rows.append(row)
            else:
                notes.append('%s not run at %d VMs (--others-nodes), and measured at fewer than two counts to extrapolate from'
                             % (name, nodes))
    shutil.rmtree(collections_path, ignore_errors=True)
    if args.profile:
        notes += ['our first run at %d VMs, per task (profile_tasks):\n%s' % (nodes, output.split('PLAY RECAP')[-1])
                  for (project, nodes, output) in run_ours.outputs[::2]]
    report(args, rows, reruns, notes)


def report(args, rows, reruns, notes):
    critical = 3 * args.latency
    ours = {row['nodes']: row for row in rows if row['name'].startswith('ours (')}
    load = ' '.join('%.1f' % value for value in os.getloadavg())
    print('Fabric (1 management + %d data networks) and %s %s VMs; every operation takes %.1fs; critical path %.1fs '
          '(network -> subnet -> instance); load average at the end %s\n'
          % (DATA_NETWORKS, ' and '.join(map(str, args.nodes)), FAMILY, args.latency, critical, load))
    print('| run | VMs | wall s | x critical path | s beyond it | x ours | CPU s | peak RSS MiB | requests | mutating '
          '| VM requests per VM | requests per VM | resources made |')
    print('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
    for row in sorted(rows, key=lambda row: (not row['name'].startswith('ours ('), row['name'], row['nodes'])):
        made = ', '.join('%s %d' % (key.split('.')[1], value) for key, value in sorted(row['created'].items()))
        name = row['name']
        if row.get('extrapolated'):
            name, made = '%s (EXTRAPOLATED from %d and %d VMs)' % ((name,) + row['extrapolated']), 'not run'
        print('| %s | %d | %.1f | %.2f | %.1f | %.2f | %.1f | %.0f | %d | %d | %.2f | %.2f | %s |' % (
            name, row['nodes'], row['wall'], row['wall'] / critical, row['wall'] - critical, row['wall'] / ours[row['nodes']]['wall'],
            row['cpu'], row['rss'], row['requests'], row['mutating'], row['vm_requests'] / row['nodes'], row['requests'] / row['nodes'], made))
    print()
    for nodes, wall, log, usage in reruns:
        reads = collections.Counter(entry['api_method'] for entry in log if entry['method'] == 'GET')
        print('Rerun of ours at %d VMs: %.1fs, %.1f CPU s, peak RSS %.0f MiB, %d requests, %d mutating; reads: %s' % (
            nodes, wall, usage.cpu_s, usage.peak_rss_mib, len(log), sum(1 for e in log if e['method'] in MUTATING),
            ', '.join('%s %d' % item for item in sorted(reads.items()))))
    small, large = ours[min(ours)], ours[max(ours)]
    growth = (large['wall'] - critical) - (small['wall'] - critical)
    print('\nTargets (ours):')
    for nodes, row in sorted(ours.items()):
        print('- %d VMs within 1.5x of the critical path: %.2fx (%s)' % (nodes, row['wall'] / critical, verdict(row['wall'] <= 1.5 * critical)))
    print('- time beyond the critical path growing by at most 1.0s from %d to %d VMs: %.1fs at %d VMs, %.1fs at %d VMs (%+.1fs) (%s)'
          % (small['nodes'], large['nodes'], small['wall'] - critical, small['nodes'], large['wall'] - critical, large['nodes'], growth,
             verdict(growth <= 1.0)))
    print('- controller cost, ansible-playbook and its workers and module processes (wait4 rusage; CPU seconds are inflated '
          'less than wall time by the load, not at all only when idle): %s' % '; '.join(
              '%.1f CPU s and %.0f MiB peak RSS at %d VMs' % (row['cpu'], row['rss'], nodes) for nodes, row in sorted(ours.items())))
    if large['nodes'] > small['nodes']:
        print('  CPU seconds per added VM from %d to %d VMs: %.1f ms' % (
            small['nodes'], large['nodes'], 1000 * (large['cpu'] - small['cpu']) / (large['nodes'] - small['nodes'])))
    large_counts = [(nodes, row) for nodes, row in sorted(ours.items()) if nodes >= 64] or [(large['nodes'], large)]
    print('- at most 1.5 requests per VM at %s VMs: %s (%s)' % (
        ' and '.join(str(nodes) for nodes, _row in large_counts),
        ', '.join('%.2f at %d (VM requests %.2f)' % (row['requests'] / nodes, nodes, row['vm_requests'] / nodes) for nodes, row in large_counts),
        verdict(all(row['requests'] <= 1.5 * nodes for nodes, row in large_counts))))
    mutating = [(nodes, sum(1 for entry in log if entry['method'] in MUTATING)) for nodes, _wall, log, _usage in reruns]
    print('- rerun with no mutating request: %s (%s)' % (', '.join('%d at %d VMs' % (count, nodes) for nodes, count in mutating),
                                                         verdict(not any(count for _nodes, count in mutating))))
    for note in notes:
        print('Note: ' + note)


def verdict(met):
    return 'met' if met else 'NOT met'


if __name__ == '__main__':
    main()

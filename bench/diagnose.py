"""Rounds and wall time of the fabric diagnosis at 16 and 64 hosts with one bad host: SIMULATED pair runs.

The localisation core (plugins/module_utils/nccl/diagnose.py) runs as the nccl_diagnose module runs it; the pair runner
is simulated: every run of a round starts at once (one thread each) and takes --pair-seconds (a stand-in for one NCCL
sweep between two hosts, which on real A3 Mega VMs is minutes, not measured here); a pair holding the bad host (or,
restricted to one NIC, the bad NIC) fails. What it shows: the time grows with the rounds, not with the pairs.

    python bench/diagnose.py [--pair-seconds 0.5] [--hosts 16 64] [--bad-nic]
"""

import argparse
import concurrent.futures
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def import_core():
    """The collection's core under its collection name (a temporary ansible_collections/aiinfra/gpudirect link)."""
    top = pathlib.Path(tempfile.mkdtemp(prefix='bench-diagnose-'))
    (top / 'ansible_collections' / 'aiinfra').mkdir(parents=True)
    (top / 'ansible_collections' / 'aiinfra' / 'gpudirect').symlink_to(ROOT)
    sys.path.insert(0, str(top))
    from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families  # pylint: disable=import-outside-toplevel
    from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import diagnose  # pylint: disable=import-outside-toplevel
    return families, diagnose


def simulated_runner(bad_host, bad_nic, pair_seconds, timings):
    def run_one(run):
        time.sleep(pair_seconds)
        broken = bad_host in run['hosts'] if not bad_nic else (bad_host in run['hosts'] and run['nic'] in (None, bad_nic))
        value = (2.0 if broken else 21.0) if run['nic'] else (17.0 if broken else 170.0)
        return dict(run, verdict='FAIL' if broken else 'PASS', busbw_gbps=value, host_evidence={})

    def run_round(runs):
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(runs)) as pool:
            results = list(pool.map(run_one, runs))
        timings.append((len(runs), time.monotonic() - started))
        return results
    return run_round


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--hosts', type=int, nargs='+', default=[16, 64])
    parser.add_argument('--pair-seconds', type=float, default=0.5)
    parser.add_argument('--bad-nic', action='store_true', help='the bad host has one bad NIC (eth3): adds one round per NIC')
    args = parser.parse_args()
    families, diagnose = import_core()
    family = families.get_family('a3-megagpu-8g', field='machine_type')
    print('SIMULATED pair runs (%.2f s each, all runs of a round at once); the localisation core is the collection\'s'
          % args.pair_seconds)
    for count in args.hosts:
        hosts = ['vm-%d' % n for n in range(1, count + 1)]
        bad = hosts[count // 2 + 1]
        timings = []
        started = time.monotonic()
        found = diagnose.diagnose(hosts, simulated_runner(bad, 'eth3' if args.bad_nic else None, args.pair_seconds, timings),
                                  nics=family.data_interface_names if args.bad_nic else (),
                                  nic_limit=diagnose.nic_threshold(family))
        total = time.monotonic() - started
        named = diagnose.bad_hosts(found['hosts'])
        nics = ['%s on %s' % (f['nic'], f['host']) for f in found['nics'] if f['named']]
        print('%d hosts, bad %s: %d rounds, %.2f s in all; named bad: %s%s' % (
            count, bad, len(found['rounds']), total, ', '.join(named) or 'none', '; NIC: ' + ', '.join(nics) if nics else ''))
        for number, (runs, seconds) in enumerate(timings, 1):
            print('  round %d: %d runs at once, %.2f s' % (number, runs, seconds))


if __name__ == '__main__':
    main()

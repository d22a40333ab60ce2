"""Bad input at the playbook level: refused by the plan step with the playbook variable named, nothing written.

Each case runs playbooks/a3high.yml (or a3mega.yml) with the real ansible-playbook against one sandbox, in its
own project, and asserts: the run fails, the message names the playbook variable and says what is wrong, and the
sandbox's request log has no mutating request for that project. The runs go four at a time (they mostly wait on
ansible-playbook's start-up), each in its own project so that the log tells them apart.
"""

import concurrent.futures
import re

import yaml

from playbook_runner import ansible_playbook, collection_root, wrong_values
from sandbox import Sandbox

MUTATING = ('POST', 'PATCH', 'PUT', 'DELETE')
SSH = {'gpudirect_ssh_source_ranges': ['203.0.113.0/24']}
FLEX = {'gpudirect_provisioning_model': 'flex_start', 'gce_instances_termination_action': 'DELETE'}


def every_variable_wrong(role):
    values = wrong_values(role)
    assert len(values) >= 3, (role, values)
    return values


# (case id, extra vars, text(s) the message must hold: the variable first, then what is wrong)
CASES = [
    # the VMs
    ('count-zero', {'gpudirect_node_count': 0}, 'gpudirect_node_count: 0 VMs; give 1 or more'),
    ('count-text', {'gpudirect_node_count': 'abc'}, "gpudirect_node_count: 'abc' is not a whole number"),
    ('count-negative', {'gpudirect_node_count': -3}, 'gpudirect_node_count: -3 VMs; give 1 or more'),
    ('count-over-subnet', {'gpudirect_node_count': 1000},
     'gpudirect_node_count: 1000 VMs need 1000 addresses in subnet a3high-mgmt-sub (192.168.0.0/24), which has 252 free'),
    ('count-huge', {'gpudirect_node_count': 100000}, 'gpudirect_node_count: 100000 VMs need 100000 addresses'),
    ('count-one-with-nccl', {'gpudirect_node_count': 1}, 'gpudirect_node_count: the NCCL test runs between VMs and 1 is planned'),
    ('model-unknown', {'gpudirect_provisioning_model': 'preemptible'}, 'gpudirect_provisioning_model: preemptible is not one of'),
    ('spot-no-action', {'gpudirect_provisioning_model': 'spot'}, 'gce_instances_termination_action: spot needs one of STOP, DELETE'),
    ('standard-with-action', {'gce_instances_termination_action': 'STOP'},
     'gce_instances_termination_action: only spot, flex_start and reservation_bound VMs take one'),
    ('flex-no-duration', FLEX, 'gce_instances_max_run_duration: flex_start VMs need one'),
    ('flex-bad-duration', dict(FLEX, gce_instances_max_run_duration='3w', gce_instances_request_valid_for_duration='1h'),
     "gce_instances_max_run_duration: '3w' is not a duration"),
    ('flex-duration-too-long', dict(FLEX, gce_instances_max_run_duration='8d', gce_instances_request_valid_for_duration='1h'),
     'gce_instances_max_run_duration: 691200s is outside 10m-7d'),
    ('flex-no-request-window', dict(FLEX, gce_instances_max_run_duration='1d'), 'gce_instances_request_valid_for_duration: flex_start VMs need one'),
    ('flex-request-window-long', dict(FLEX, gce_instances_max_run_duration='1d', gce_instances_request_valid_for_duration='3h'),
     'gce_instances_request_valid_for_duration: 10800s is outside 90s-2h'),
    ('flex-with-reservation', dict(FLEX, gce_instances_max_run_duration='1d', gce_instances_request_valid_for_duration='1h',
                                   gce_instances_reservation='r1'), 'gce_instances_reservation: only reservation_bound VMs take one'),
    ('bound-no-reservation', {'gpudirect_provisioning_model': 'reservation_bound', 'gce_instances_termination_action': 'STOP'},
     'gce_instances_reservation: reservation_bound VMs need the name or URL of a specific reservation'),
    ('names-duplicate', {'gce_instances_names': ['vm-a', 'vm-a']}, 'gce_instances_names: vm-a appears more than once'),
    ('names-invalid', {'gce_instances_names': ['VM_1']}, "gce_instances_names: 'VM_1' is not a valid VM name"),
    ('pattern-without-n', {'gce_instances_name_pattern': 'node'}, "gce_instances_name_pattern: 'node' gives the same name to every VM"),
    ('label-upper-case', {'gce_instances_labels': {'Team': 'ml'}}, "gce_instances_labels: 'Team: ml' is not a valid label"),
    ('disk-size-text', {'gce_instances_boot_disk_size_gb': 'big'}, "gce_instances_boot_disk_size_gb: 'big' is not a whole number"),
    ('disk-size-negative', {'gce_instances_boot_disk_size_gb': -10}, 'gce_instances_boot_disk_size_gb: -10 GB; a boot disk needs at least 10 GB'),
    ('disk-type-unknown', {'gce_instances_boot_disk_type': 'pd-fast'}, 'gce_instances_boot_disk_type: a3-highgpu-8g does not take pd-fast disks; use one of'),
    ('image-family-unknown', {'gce_instances_image_family': 'cos-999-lts'},
     "gce_instances_image_family: image family 'cos-999-lts' does not exist in project cos-cloud"),
    ('zone-unknown-letter', {'gpudirect_zone': 'us-central1-z'},
     "gpudirect_zone: zone 'us-central1-z' does not exist in region us-central1 (zones of us-central1: us-central1-a, us-central1-b"),
    ('zone-is-a-region', {'gpudirect_zone': 'us-central1'}, "gpudirect_zone: 'us-central1' is a region, not a zone; give one of its zones"),
    ('zone-unknown-region', {'gpudirect_zone': 'mars-north9-a'}, "gpudirect_zone: region 'mars-north9' does not exist in Compute Engine"),
    ('zone-not-a-name', {'gpudirect_zone': 'Central'}, "gpudirect_zone: 'Central' is not a zone name"),
    ('zone-without-machine-type', {'gpudirect_zone': 'us-central1-f'}, 'gpudirect_zone: a3-highgpu-8g is not offered in zone us-central1-f'),
    ('fallback-zone-other-region', {'gce_instances_fallback_zones': ['us-east4-a']},
     'gce_instances_fallback_zones: us-east4-a is not in us-central1'),
    ('fallback-zone-unknown', {'gce_instances_fallback_zones': ['us-central1-q']},
     "gce_instances_fallback_zones: zone 'us-central1-q' does not exist in region us-central1"),
    ('instances-timeout-zero', {'gce_instances_timeout': 0}, 'gce_instances_timeout: 0 seconds'),
    ('placement-create-without-name', {'gce_instances_create_placement_policy': True},
     'gce_instances_placement_policy: give the name of the compact placement policy to create'),
    ('metadata-not-a-mapping', {'gce_instances_metadata': ['ssh-keys']}, 'gce_instances_metadata:'),
    ('project-invalid', {'__project': 'My Project'}, "gpudirect_project: 'My Project' is not a valid project ID"),
    # the GPUDirect network
    ('ssh-world', {'gpudirect_ssh_source_ranges': ['0.0.0.0/0']},
     'gpudirect_ssh_source_ranges: 0.0.0.0/0 together open the port to the whole internet; give your own address ranges, '
     'or set gce_network_ssh_from_anywhere: true'),
    ('ssh-world-split', {'gpudirect_ssh_source_ranges': ['0.0.0.0/1', '128.0.0.0/1']},
     'gpudirect_ssh_source_ranges: 0.0.0.0/1 + 128.0.0.0/1 together open the port to the whole internet'),
    ('ssh-world-ipv6', {'gpudirect_ssh_source_ranges': ['::0/0']}, 'gpudirect_ssh_source_ranges: ::0/0 together open the port'),
    ('ssh-from-anywhere-not-bool', {'gce_network_ssh_from_anywhere': 'maybe'},
     "gce_network_ssh_from_anywhere: 'maybe' is not true or false"),
    ('ssh-not-cidr', {'gpudirect_ssh_source_ranges': ['office']}, "gpudirect_ssh_source_ranges: 'office' is not a CIDR range"),
    ('mtu-too-big', {'gce_network_mtu': 9000}, 'gce_network_mtu: 9000 is outside the 1300-8896'),
    ('data-cidrs-count', {'gce_network_data_cidrs': ['10.1.0.0/24', '10.2.0.0/24', '10.3.0.0/24']},
     'gce_network_data_cidrs: 3 ranges given, but this family has 4 data NICs'),
    ('data-cidrs-overlap', {'gce_network_data_cidrs': ['10.1.0.0/16', '10.1.1.0/24', '10.3.0.0/24', '10.4.0.0/24']},
     'gce_network_management_cidr / gce_network_data_cidrs: 10.1.0.0/16 overlaps 10.1.1.0/24'),
    ('management-public', {'gce_network_management_cidr': '8.8.8.0/24'},
     'gce_network_management_cidr / gce_network_data_cidrs: 8.8.8.0/24 is not a private IPv4 range'),
    ('prefix-invalid', {'gpudirect_network_prefix': 'A3'}, "gpudirect_network_prefix: 'A3-mgmt-external-ping' is not a valid Compute Engine name"),
    ('internal-world', {'gce_network_internal_source_ranges': ['0.0.0.0/0']},
     'gce_network_internal_source_ranges: 0.0.0.0/0 together cover the whole internet'),
    ('network-timeout-zero', {'gce_network_timeout': 0}, 'gce_network_timeout: 0 seconds'),
    # host preparation
    ('host-range-not-cidr', {'cos_host_prep_firewall_source_ranges': ['10.0.0.300/24']},
     "cos_host_prep_firewall_source_ranges: '10.0.0.300/24' is not a CIDR range"),
    ('host-range-world', {'cos_host_prep_firewall_source_ranges': ['0.0.0.0/1', '128.0.0.0/1']},
     'cos_host_prep_firewall_source_ranges: 0.0.0.0/1 + 128.0.0.0/1 together accept TCP from anywhere; give the data subnets, '
     'or set cos_host_prep_firewall: accept_all'),
    ('host-firewall-unknown', {'cos_host_prep_firewall': 'open'}, 'cos_host_prep_firewall: open is not one of data_ranges, accept_all, none'),
    ('host-rxdm-unknown', {'cos_host_prep_rxdm_version': 'v9.9.9'}, 'cos_host_prep_rxdm_version: rxdm v9.9.9 is not in a known-good TCPX pair'),
    ('host-driver-version', {'cos_host_prep_gpu_driver_version': '1'},
     "cos_host_prep_gpu_driver_version: '1' is not a driver version cos-extensions installs; give latest or a version such as 535.183.01"),
    ('host-timeout-zero', {'cos_host_prep_rxdm_ready_timeout': 0}, 'cos_host_prep_rxdm_ready_timeout: 0 seconds'),
    # seed 000's image: cos-121-lts or later, and Container-Optimized OS for the host stage (issue 24 item 6: both were
    # accepted, the VMs created, and the host stage failed after)
    ('image-family-older-cos', {'gce_instances_image_family': 'cos-117-lts'},
     "gce_instances_image_family: cos-117-lts is older than cos-121-lts, the oldest family Google's Compute Engine GPUDirect guide allows"),
    ('image-not-cos-with-host-stage', {'gce_instances_image_project': 'ubuntu-os-cloud', 'gce_instances_image_family': 'ubuntu-2204-lts'},
     'gce_instances_image_project: ubuntu-os-cloud is not Container-Optimized OS, which the host stage (cos_host_prep) prepares; '
     'leave it unset for cos-cloud/cos-121-lts, or skip the host stage (--skip-tags host)'),
    # the NCCL test
    ('nccl-timeout-zero', {'nccl_test_timeout': 0}, 'nccl_test_timeout: 0; give the seconds the test may run'),
    ('nccl-threshold-key', {'nccl_test_thresholds': {'all_gather': {'fastest': 1}}}, 'nccl_test_thresholds.all_gather: unknown key(s) fastest'),
    ('nccl-keep-log-unknown', {'nccl_test_keep_log': 'sometimes'}, 'nccl_test_keep_log: sometimes is not one of on_failure, always, never'),
    # the roles' variables: a misspelt or unknown name ran with the default and built something else; one that
    # contradicts what the playbook derives would win over it at the role.
    ('role-variable-misspelt', {'nccl_test_family': 'a3mega'},
     'nccl_test_family: role nccl_test has no such variable; its variables are'),
    ('role-variable-close-to-one', {'gce_instances_boot_disk_sise_gb': 300},
     'gce_instances_boot_disk_sise_gb: role gce_instances has no such variable; did you mean gce_instances_boot_disk_size_gb?'),
    ('role-variable-contradicts', {'gce_instances_count': 5},
     'gce_instances_count: 5 differs from 2, which the playbook gives role gce_instances (from gpudirect_node_count), and would '
     'win over it; leave gce_instances_count unset and set gpudirect_node_count instead'),
    ('role-variable-contradicts-host-stage', {'nccl_test_plugin_version': 'v3.1.9'},
     "nccl_test_plugin_version: 'v3.1.9' differs from null (unset), which the playbook gives role nccl_test (from cos_host_prep_plugin_version)"),
    ('extra-var-renamed', {'gpudirect_prefix': 'zz'},
     'gpudirect_prefix: gce_cluster.yml reads no such variable; did you mean gpudirect_network_prefix?'),
    ('strict-vars-not-boolean', {'gpudirect_strict_vars': 'maybe'},
     "gpudirect_strict_vars: 'maybe' is not true or false; give true"),
    # every variable of the four roles at once, each with a value of the wrong type (see wrong_values)
    *(('every-%s-variable' % role, values, ['%s: ' % name for name in values])
      for role, values in ((role, every_variable_wrong(role)) for role in ('gce_network', 'gce_instances', 'cos_host_prep', 'nccl_test'))),
]


def project_of(index, extra):
    return extra.get('__project') or 'inputs-case-%02d' % index


def run_every_case():
    """{case id: (CompletedProcess, mutating requests of its project)}: every case run once, four at a time."""
    sandbox = Sandbox(latency=0.0, seed=0, project='sandbox-project').start()
    try:
        def run(index_case):
            index, (case, extra, _expected) = index_case
            extra_vars = dict(SSH, **{key: value for key, value in extra.items() if key != '__project'})
            return case, ansible_playbook(sandbox, 'a3high.yml', extra_vars, project=project_of(index, extra), timeout=300)

        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            results = dict(pool.map(run, enumerate(CASES)))
        log = sandbox.request_log()
    finally:
        sandbox.stop()
    runs = {}
    for index, (case, extra, _expected) in enumerate(CASES):
        marker = '/projects/%s/' % project_of(index, extra).replace(' ', '%20')
        runs[case] = (results[case], [entry for entry in log if entry['method'] in MUTATING and marker in entry['path']])
    return runs


def test_at_least_forty_cases_each_with_its_own_id():
    assert len(CASES) >= 40
    assert len({case for case, _extra, _expected in CASES}) == len(CASES)


def test_bad_input_is_refused_by_the_plan_step_before_anything_is_written():
    """One test over the whole table (one sandbox, runs in parallel), so that pytest-xdist does not run the
    table once per worker; every failing case is listed with what went wrong."""
    failures = []
    for case, (result, written) in run_every_case().items():
        expected = dict((c, x) for c, _e, x in CASES)[case]
        refusal = re.search(r'fatal: \[localhost\]: FAILED! => (\{.*\})', result.stdout)
        last_task = result.stdout.split('fatal:')[0].rsplit('TASK [', 1)[-1]
        if result.returncode == 0 or not refusal:
            failures.append('%s: not refused (rc %s): %s' % (case, result.returncode, result.stdout[-500:]))
        elif not last_task.startswith("Check every stage's input before anything is created]"):
            failures.append('%s: refused by a later task: %s' % (case, last_task[:120]))
        else:
            failures += ['%s: message %s does not hold %r' % (case, refusal.group(1)[:600], text)
                         for text in ([expected] if isinstance(expected, str) else expected) if text not in refusal.group(1)]
        if written:
            failures.append('%s: %d mutating requests: %s' % (case, len(written), [(e['method'], e['path']) for e in written[:3]]))
    assert failures == [], '\n'.join(failures)


def test_each_role_passes_its_module_option_x_from_its_variable_role_x():
    """The plan step checks role variable ROLE_X as option X of the module the role's task calls (gpudirect_plan's
    role_stages), so each such task must pass option X from ROLE_X (or from the variable of an alias of X): an option fed
    from another variable would be checked with a value other than the one that runs."""
    import importlib
    modules = {'gce_gpudirect_network': 'gce.network', 'gce_gpudirect_instance': 'gce.instance', 'nccl_perf': 'nccl.command',
               'gke_gpudirect_cluster': 'gke.cluster', 'gke_gpudirect_node_pool': 'gke.node_pool'}
    # Options a task derives from what only exists at run time (the hosts of the play), which the plan step fills itself.
    derived = {('nccl_test', 'hosts'), ('nccl_test', 'path')}
    checked = 0
    for role, module in (('gce_network', 'gce_gpudirect_network'), ('gce_instances', 'gce_gpudirect_instance'), ('nccl_test', 'nccl_perf'),
                         ('gke_cluster', 'gce_gpudirect_network'), ('gke_cluster', 'gke_gpudirect_cluster'),
                         ('gke_node_pool', 'gke_gpudirect_node_pool')):
        utils = importlib.import_module('ansible_collections.aiinfra.gpudirect.plugins.module_utils.' + modules[module])
        spec = utils.ARGUMENT_SPEC if hasattr(utils, 'ARGUMENT_SPEC') else utils.argument_spec()
        tasks = [task for path in sorted((collection_root() / 'roles' / role / 'tasks').glob('*.yml'))
                 for task in yaml.safe_load(path.read_text(encoding='utf-8')) or []]
        calls = [task['aiinfra.gpudirect.' + module] for block in tasks for task in block.get('block', [block])
                 if 'aiinfra.gpudirect.' + module in task]
        assert calls, (role, module)
        for args in calls:
            for option, expression in args.items():
                option = next(name for name, value in spec.items() if option in [name] + list(value.get('aliases') or []))
                names = [option] + list(spec[option].get('aliases') or [])
                if (role, option) in derived or not isinstance(expression, str) or '{{' not in expression:
                    continue
                assert any(re.search(r'\b%s_%s\b' % (role, name), expression) for name in names), (role, option, expression)
                checked += 1
    assert checked > 70


def test_the_host_firewall_follows_the_networks_data_ranges():
    """cos_host_prep's iptables ranges are the GPUDirect network's data ranges when the user gives them
    (gce_network_data_cidrs), in every play of gce_cluster.yml (one shared vars block), and the plan checks the
    same variable."""
    plays = yaml.safe_load((collection_root() / 'playbooks' / 'gce_cluster.yml').read_text(encoding='utf-8'))
    for play in plays:
        assert play['vars']['cos_host_prep_firewall_source_ranges'] == '{{ __gpudirect_data_cidrs }}'
        assert play['vars']['__gpudirect_data_cidrs'] == "{{ gce_network_data_cidrs | default([], true) }}"
    plan = plays[0]['tasks'][0]
    assert '__gpudirect_host_role' in plan['aiinfra.gpudirect.gpudirect_plan']['roles']
    assert plan['vars']['__gpudirect_host_role']['role'] == 'cos_host_prep'


def test_an_unread_extra_var_is_only_warned_about_with_gpudirect_strict_vars_false():
    """The same renamed variable with gpudirect_strict_vars: false: a warning naming it, and the run goes on (check mode)."""
    sandbox = Sandbox(latency=0.0, seed=0, project='sandbox-project').start()
    try:
        run = ansible_playbook(sandbox, 'a3high.yml', dict(SSH, gpudirect_prefix='zz', gpudirect_strict_vars=False),
                               project='inputs-warn', args=('--check', '--tags', 'network'), timeout=300)
    finally:
        sandbox.stop()
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert 'gpudirect_prefix: gce_cluster.yml reads no such variable; did you mean gpudirect_network_prefix?' in run.stdout + run.stderr


def test_the_vms_gpus_must_fit_the_regional_quota_at_the_plan_step():
    """Two A3 High VMs need 16 GPUs of NVIDIA_H100_GPUS; with 8 left the plan step refuses, with the numbers, before the
    network stage writes anything (Compute Engine would refuse the second insert after the network exists)."""
    sandbox = Sandbox(latency=0.0, seed=0, project='sandbox-project').start()
    sandbox.set_quota('NVIDIA_H100_GPUS', 8, project='inputs-quota', region='us-central1')
    try:
        run = ansible_playbook(sandbox, 'a3high.yml', dict(SSH), project='inputs-quota', timeout=300)
        writes = [e for e in sandbox.request_log() if e['method'] in ('POST', 'PUT', 'PATCH', 'DELETE') and '/inputs-quota/' in e['path']]
    finally:
        sandbox.stop()
    assert run.returncode != 0
    assert 'need 16 GPUs of quota NVIDIA_H100_GPUS in us-central1, and the project has 8 of its limit of 8 left there' in run.stdout, \
        run.stdout[-3000:]
    assert writes == []


# The playbooks that only delete or only test: a misspelt or renamed variable, or a role variable of the wrong type,
# refused by their plan step before any request that writes (a teardown that ran with a misspelt prefix would delete
# the default prefix's resources).
TEARDOWN_CASES = [
    ('teardown.yml', {'gpudirect_machine_type': 'a3-highgpu-8g', 'gpudirect_prefix': 'zz'},
     ['gpudirect_prefix: teardown.yml reads no such variable; did you mean gpudirect_network_prefix?']),
    ('teardown.yml', {'gpudirect_machine_type': 'a3-highgpu-8g', 'gce_instances_count': 5},
     ['gce_instances_count']),
    ('teardown.yml', dict({'gpudirect_machine_type': 'a3-highgpu-8g'}, **wrong_values('gce_network')),
     ['%s: ' % name for name in wrong_values('gce_network') if name not in ('gce_network_state',)]),
    ('gke_teardown.yml', {'gpudirect_machine_type': 'a3-megagpu-8g', 'gpudirect_nodepool': 'a3mega-gpu'},
     ['gpudirect_nodepool: gke_teardown.yml reads no such variable; did you mean gpudirect_node_pool?']),
    ('gke_teardown.yml', {'gpudirect_machine_type': 'a3-ultragpu-8g', 'gke_rdma_namespce': 'rdma'},
     ['gke_rdma_namespce: role gke_rdma has no such variable; did you mean gke_rdma_namespace?']),
    ('gke_teardown.yml', {'gpudirect_machine_type': 'a3-ultragpu-8g', 'gke_rdma_wait_retries': 'abc'},
     ['gke_rdma_wait_retries']),
    ('nccl_test.yml', {'nccl_test_family': 'a3mega'}, ['nccl_test_family: role nccl_test has no such variable']),
    ('nccl_test.yml', {'nccl_test_ngpus': 'eight'}, ['nccl_test_ngpus']),
]


def test_the_teardowns_and_the_nccl_playbook_check_their_variables_before_any_write():
    sandbox = Sandbox(latency=0.0, seed=0, project='sandbox-project').start()
    try:
        runs = [(playbook, extra, expected, ansible_playbook(sandbox, playbook, extra, timeout=300,
                                                             project=None if playbook == 'nccl_test.yml' else 'teardown-case-%02d' % index))
                for index, (playbook, extra, expected) in enumerate(TEARDOWN_CASES)]
        log = sandbox.request_log()
    finally:
        sandbox.stop()
    failures = []
    for index, (playbook, extra, expected, run) in enumerate(runs):
        refusal = re.search(r'fatal: \[localhost\]: FAILED! => (\{.*\})', run.stdout)
        last_task = run.stdout.split('fatal:')[0].rsplit('TASK [', 1)[-1]
        if run.returncode == 0 or not refusal:
            failures.append('%s %s: not refused (rc %s): %s' % (playbook, extra, run.returncode, run.stdout[-800:]))
            continue
        if not last_task.startswith('Check the inputs before'):
            failures.append('%s %s: refused by a later task: %s' % (playbook, extra, last_task[:120]))
        failures += ['%s %s: message %s lacks %r' % (playbook, extra, refusal.group(1)[:600], text) for text in expected
                     if text not in refusal.group(1)]
        written = [entry for entry in log if entry['method'] in MUTATING and '/projects/teardown-case-%02d/' % index in entry['path']]
        if written:
            failures.append('%s %s: %d mutating requests' % (playbook, extra, len(written)))
    assert failures == [], '\n'.join(failures)

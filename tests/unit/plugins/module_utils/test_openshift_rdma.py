"""The OpenShift RDMA catalog against the chapter's facts, the rendered objects against their CRDs (strict)
and kubernetes-validate (built-ins), the OLM decisions, the input checks and the perftest parser."""

from __future__ import annotations

import copy
import glob
import json
import os
import re

import jsonschema
import kubernetes_validate
import pytest
import yaml

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import openshift as catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import applied
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.openshift import olm
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import readiness
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.perftest import output as perftest
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.openshift import render
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError

TESTS = os.path.join(os.path.dirname(__file__), '..', '..', '..')
with open(os.path.join(TESTS, 'unit', 'seeds', 'openshift-rdma.md'), encoding='utf-8') as _handle:
    CHAPTER = _handle.read()
CRD_DIR = os.path.join(TESTS, 'sandbox', 'kube', 'crds', 'openshift')
CONFIGURATIONS = sorted(catalog.CONFIGURATIONS)


def section(number):
    start = CHAPTER.index('\n## %s. ' % number)
    return CHAPTER[start:CHAPTER.index('\n## ', start + 5)]


# the catalog against the chapter --------------------------------------------------------------------
@pytest.mark.parametrize('operator', catalog.OPERATORS, ids=lambda o: o['key'])
def test_operator_row_matches_the_chapter(operator):
    row = next(line for line in section(1).splitlines() if line.startswith('| ') and operator['namespace'] in line.split('|')[2])
    cells = [cell.strip() for cell in row.split('|')[1:-1]]
    assert '`%s`' % operator['namespace'] in cells[1]
    assert operator['operator_group'] in cells[2] or 'needed, not shown' in cells[2]
    assert '`%s` / `%s`' % (operator['subscription'], operator['package']) == cells[3]
    assert (operator['channel'] and '`%s`' % operator['channel'] == cells[4]) or (operator['channel'] is None and 'defaultChannel' in cells[4])
    assert '`%s`' % operator['source'] == cells[5]
    assert ('Manual' in cells[6]) == (operator['approval'] == 'Manual') == operator['pin_csv']
    for key, value in operator['namespace_labels'].items():
        assert '`%s: "%s"`' % (key, value) in cells[1] or '`%s: %s`' % (key, value) in cells[1]
    for key, value in operator['namespace_annotations'].items():
        assert '`%s: %s`' % (key, value) in cells[1]


def test_operators_in_the_chapters_order():
    assert [o['package'] for o in catalog.OPERATORS] == [p for p, _ns, _src in catalog.OPENSHIFT_RDMA['subscriptions']]


@pytest.mark.parametrize('key', CONFIGURATIONS, ids='/'.join)
def test_configuration_row_matches_the_chapter(key):
    conf = catalog.CONFIGURATIONS[key]
    rows = [line for line in section(9).splitlines() if re.match(r'^\| \d \|', line)]
    order = [('shared_device', 'roce'), ('shared_device', 'infiniband'), ('host_device', 'roce'), ('host_device', 'infiniband'),
             ('sriov_legacy', 'roce'), ('sriov_legacy', 'infiniband')]
    row = rows[order.index(key)]
    assert ('*(derived)*' in row) == conf['derived']
    assert conf['network_kind'] in row
    if not conf['derived']:
        assert '`%s`' % conf['network_name'] in row
        assert conf['resource'] in row
        assert '`nvidia.com/gpu: 1`' in row
    if conf['network_kind'] == 'HostDeviceNetwork' and conf.get('link_type'):
        assert 'linkTypes: ["%s"]' % conf['link_type'] in row


def test_images_and_names_match_the_chapter():
    text = section(4)
    for part, (image, repository, version) in catalog.NIC_IMAGES.items():
        if part == 'ofedDriver':
            assert 'image: %s' % image in text and 'repository: %s' % repository in text and 'version: %s' % version in text
        else:
            flat = re.sub(r'\s+', ' ', text)
            assert '{%s, %s, %s' % (image, repository, version) in flat or \
                'image `%s`, repository `%s`, version `%s`' % (image, repository, version) in flat, part
    assert 'named `%s` is reconciled' % catalog.NIC_CLUSTER_POLICY_NAME in text
    assert '`%s`' % catalog.CLUSTER_POLICY_NAME in section(5)
    assert 'rdmaHcaMax %d' % catalog.RDMA_HCA_MAX in text
    for entry in catalog.MACHINE_CONFIGS.values():
        assert '`%s`' % entry['name'] in section(8)
    command = ' '.join(catalog.IB_WRITE_BW_FLAGS)
    assert 'ib_write_bw %s -d <dev> -p %d' % (command, catalog.IB_WRITE_BW_PORT) in section(10)
    assert catalog.TEST_POD_IMAGE in section(9)
    for key, value in catalog.SRIOV_OPERATOR_CONFIG.items():
        if key != 'name':
            assert '`%s: %s`' % (key, json.dumps(value)) in section(3)


def test_chapter_ipam_ranges_and_distinct_defaults():
    assert 'range 192.168.2.0/24 gateway 192.168.2.1' in section(7)
    assert '192.168.6.225/28 excluding 192.168.6.229/30 and 192.168.6.236/32' in section(7)
    assert 'ipam whereabouts\n  192.168.3.225/28' in section(7)
    ranges = [conf['ipam']['range'] for conf in catalog.CONFIGURATIONS.values()]
    assert len(set(ranges)) == len(ranges)
    for conf in catalog.CONFIGURATIONS.values():
        assert render.problems({'method': 'shared_device', 'link': 'roce', 'ipam': dict(conf['ipam'])}) == []


# rendered objects against their schemas ----------------------------------------------------------------
def _crd_schemas():
    schemas = {}
    for path in glob.glob(os.path.join(CRD_DIR, '*', '*.yaml')):
        with open(path, encoding='utf-8') as handle:
            crd = yaml.safe_load(handle)
        for version in crd['spec']['versions']:
            schemas[('%s/%s' % (crd['spec']['group'], version['name']), crd['spec']['names']['kind'])] = \
                version['schema']['openAPIV3Schema']
    return schemas


SCHEMAS = _crd_schemas()


def strict(schema):
    """openAPIV3Schema -> JSON Schema refusing unknown fields (as the API under fieldValidation=Strict)."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if node.get('type') == 'object' and 'properties' in node and not node.get('x-kubernetes-preserve-unknown-fields') \
                    and 'additionalProperties' not in node:
                node['additionalProperties'] = False
            if node.get('nullable'):
                node.pop('type', None)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(schema)
    schema['properties']['metadata'] = {'type': 'object'}
    return schema


def validate(obj):
    key = (obj['apiVersion'], obj['kind'])
    if key in SCHEMAS:
        jsonschema.Draft7Validator(strict(SCHEMAS[key])).validate(obj)
    else:
        kubernetes_validate.validate(obj, '1.30', strict=True)


def every_object(method, link):
    options = {'method': method, 'link': link}
    sample = {'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'metadata': {'name': 'x'},
              'spec': {'daemonsets': {}, 'dcgm': {}, 'dcgmExporter': {}, 'devicePlugin': {}, 'driver': {}, 'gfd': {},
                       'nodeStatusExporter': {}, 'operator': {}, 'toolkit': {}}}
    objects = [o for operator in catalog.OPERATORS for o in render.operator_objects(operator, 'stable', 'x.v1.0.0')]
    objects += [render.nfd_instance('image'), render.sriov_operator_config(), render.nic_cluster_policy(options),
                render.cluster_policy(sample)]
    objects += render.machine_configs(list(catalog.MACHINE_CONFIGS), udev_rules='SUBSYSTEM=="net"\n')
    objects += render.method_objects(options)
    objects += render.test_pods(options, ['node-a', 'node-b'])
    return objects


@pytest.mark.parametrize('key', CONFIGURATIONS, ids='/'.join)
def test_every_rendered_object_validates_strictly(key):
    for obj in every_object(*key):
        validate(obj)


def test_strict_validation_can_fail():
    policy = render.nic_cluster_policy({'method': 'shared_device', 'link': 'roce'})
    policy['spec']['rdmaSharedDevicePlugin']['unknownField'] = 1
    with pytest.raises(jsonschema.ValidationError):
        validate(policy)
    pod = render.test_pods({'method': 'shared_device', 'link': 'roce'}, ['a', 'b'])[0]
    pod['spec']['containers'][0]['imagePullPolicyX'] = 'x'
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(pod)


# the method's objects ------------------------------------------------------------------------------------
@pytest.mark.parametrize('key', CONFIGURATIONS, ids='/'.join)
def test_method_objects_follow_the_catalog(key):
    options = {'method': key[0], 'link': key[1]}
    conf = catalog.CONFIGURATIONS[key]
    objects = render.method_objects(options)
    network = objects[-1]
    assert (network['kind'], network['metadata']['name']) == (conf['network_kind'], conf['network_name'])
    assert json.loads(network['spec']['ipam'])['range'] == conf['ipam']['range']
    policy = render.nic_cluster_policy(options)
    assert set(policy['spec']) == {{'ofedDriver': 'ofedDriver', 'rdmaSharedDevicePlugin': 'rdmaSharedDevicePlugin',
                                    'sriovDevicePlugin': 'sriovDevicePlugin', 'ipoib': 'secondaryNetwork'}[p] for p in conf['nic_parts']}
    pod = render.test_pods(options, ['a', 'b'])[0]
    limits = pod['spec']['containers'][0]['resources']['limits']
    assert limits == {'nvidia.com/gpu': 1, conf['resource']: 1}
    assert pod['metadata']['annotations']['k8s.v1.cni.cncf.io/networks'] == conf['network_name']
    stale = render.stale_objects(options)
    assert all(ref['name'] != conf['network_name'] or ref['kind'] != conf['network_kind'] for ref in stale)
    assert len(stale) + len(objects) == len(render.every_method_object(options))


def test_sriov_ib_policy_is_derived_with_link_type_ib():
    policy, network = render.method_objects({'method': 'sriov_legacy', 'link': 'infiniband'})
    assert policy['spec']['linkType'] == 'IB' and policy['spec']['isRdma'] is True
    assert network['kind'] == 'SriovIBNetwork' and network['spec']['linkState'] == 'enable'


def test_rdma_workload_adds_to_a_job_template_without_duplicates():
    job = {'apiVersion': 'batch/v1', 'kind': 'Job', 'metadata': {'name': 'j'},
           'spec': {'template': {'metadata': {'annotations': {'k8s.v1.cni.cncf.io/networks': 'other'}},
                                 'spec': {'restartPolicy': 'Never', 'containers': [{'name': 'c', 'image': 'i'}]}}}}
    options = {'method': 'host_device', 'link': 'roce'}
    once = render.rdma_workload(job, options, gpus=2)
    twice = render.rdma_workload(once, options, gpus=2)
    assert once == twice
    template = twice['spec']['template']
    assert template['metadata']['annotations']['k8s.v1.cni.cncf.io/networks'] == 'other,hostdev-net'
    assert template['spec']['containers'][0]['resources']['requests'] == {'nvidia.com/gpu': 2, 'nvidia.com/hostdev': 1}
    assert template['spec']['containers'][0]['securityContext']['capabilities']['add'] == ['IPC_LOCK']
    validate(twice)


# checks before anything is created ------------------------------------------------------------------------
NODE = {'metadata': {'name': 'w0', 'labels': {'feature.node.kubernetes.io/pci-15b3.present': 'true'}}}
STATE = {'status': {'interfaces': [{'name': 'ens8f0np0', 'totalvfs': 16}]}}
BAD_INPUTS = [
    ({'method': 'rdma'}, {}, 'openshift_rdma_method'),
    ({'link': 'ethernet'}, {}, 'openshift_rdma_link'),
    ({'ipam': {'range': 'not-a-range'}}, {}, 'openshift_rdma_ipam.range'),
    ({'ipam': {'gateway': '192.168.9.1'}}, {}, 'openshift_rdma_ipam.range is required'),
    ({'ipam': {'range': '192.168.9.0/24', 'gateway': '192.168.8.1'}}, {}, 'openshift_rdma_ipam.gateway'),
    ({'ipam': {'range': '192.168.9.0/24', 'exclude': ['192.168.10.0/30']}}, {}, 'openshift_rdma_ipam.exclude'),
    ({'ipam': {'range': '10.129.0.0/24'}}, {}, 'overlaps the cluster range 10.128.0.0/14'),
    ({'ipam': {'range': '192.168.9.0/24'}, 'reserved_ranges': ['192.168.0.0/16']}, {}, 'overlaps the cluster range 192.168.0.0/16'),
    ({'ipam': {'range': '192.168.9.0/31'}}, {}, 'fewer than 4 addresses'),
    ({'vendor': '15B3X'}, {}, 'openshift_rdma_nic_vendor'),
    ({'device_ids': ['a2d']}, {}, 'openshift_rdma_nic_device_ids'),
    ({'pf_names': ['ens8f0np0#0-']}, {}, 'openshift_rdma_nic_pf_names'),
    ({'node_selector': {'gpu': 'yes'}}, {'nodes': [NODE]}, 'openshift_rdma_node_selector'),
    ({'method': 'sriov_legacy', 'num_vfs': 32}, {'node_states': [STATE]}, 'exceeds the 16 VFs'),
    ({'method': 'sriov_legacy', 'num_vfs': -1}, {}, 'openshift_rdma_num_vfs=-1'),
    ({'num_vfs': 4}, {}, 'applies to method sriov_legacy only'),
    ({}, {'version': '4.14.12'}, 'cluster version 4.14.12'),
    ({}, {'cluster_policies': [{'metadata': {'name': 'other'}, 'spec': {}}]}, 'ClusterPolicy other'),
    ({}, {'cluster_policies': [{'metadata': {'name': 'gpu-cluster-policy'}, 'spec': {'driver': {'rdma': {'useHostMofed': True}}}}]},
     'useHostMofed'),
    ({'network_namespace': 'Bad_NS'}, {}, 'openshift_rdma_network_namespace'),
    ({'mtu': 100}, {}, 'openshift_rdma_mtu'),
    ({'threshold_fraction': 1.5}, {}, 'openshift_rdma_threshold_fraction'),
    ({'link_gbps': 0}, {}, 'openshift_rdma_link_gbps'),
]


UNLABELLED = {'metadata': {'name': 'w1', 'labels': {'node-role.kubernetes.io/worker': '', 'rack': 'r1'}}}


def test_a_selector_is_judged_before_nfd_runs_on_its_other_labels_and_whole_after():
    """Before NFD has labelled any node, its labels cannot be judged, the others can (a misspelt rack label would leave
    the SR-IOV waits to run out after the operators' writes); once any node carries an NFD label, the whole selector is."""
    nfd = {'feature.node.kubernetes.io/pci-15b3.present': 'true'}
    assert render.selector_problems({}, [UNLABELLED]) == []     # the default selector is NFD's: not judged yet
    assert render.selector_problems({'node_selector': dict(nfd, rack='r1')}, [UNLABELLED]) == []
    [problem] = render.selector_problems({'node_selector': dict(nfd, rack='r9')}, [UNLABELLED])
    assert problem.startswith('openshift_rdma_node_selector {"rack": "r9"} matches none of the 1 nodes (NFD has not labelled them'), problem
    labelled = {'metadata': {'name': 'w2', 'labels': dict(nfd, rack='r2')}}
    [problem] = render.selector_problems({'node_selector': dict(nfd, rack='r1')}, [UNLABELLED, labelled])
    assert problem.startswith('openshift_rdma_node_selector {"feature.node.kubernetes.io/pci-15b3.present": "true", "rack": "r1"} '
                              'matches none of the 2 nodes: check the NIC'), problem
    assert render.selector_problems({'node_selector': dict(nfd, rack='r2')}, [UNLABELLED, labelled]) == []


@pytest.mark.parametrize('given,cluster,expected', BAD_INPUTS, ids=[b[2][:40] for b in BAD_INPUTS])
def test_bad_input_is_refused_naming_the_field(given, cluster, expected):
    options = dict({'method': 'shared_device', 'link': 'roce'}, **given)
    problems = render.problems(options, cluster)
    assert any(expected in problem for problem in problems), problems


def test_good_input_has_no_problems():
    cluster = {'version': '4.17.3', 'nodes': [NODE], 'node_states': [STATE], 'cluster_policies': []}
    for method, link in CONFIGURATIONS:
        assert render.problems({'method': method, 'link': link}, cluster) == []
    assert render.problems({'method': 'sriov_legacy', 'link': 'roce', 'num_vfs': 16}, cluster) == []


# OLM decisions and verdicts -----------------------------------------------------------------------------
def manifest(default='v24.9'):
    return {'metadata': {'name': 'gpu-operator-certified'},
            'status': {'defaultChannel': default, 'channels': [{'name': 'v24.9', 'currentCSV': 'gpu-operator-certified.v24.9.2'},
                                                               {'name': 'stable', 'currentCSV': 'gpu-operator-certified.v25.3.0'}]}}


def test_channel_from_the_package_manifest():
    assert olm.resolve_channel(manifest()) == ('v24.9', 'gpu-operator-certified.v24.9.2')
    assert olm.resolve_channel(manifest(), 'stable') == ('stable', 'gpu-operator-certified.v25.3.0')
    with pytest.raises(olm.InputError, match="no channel 'v9'"):
        olm.resolve_channel(manifest(), 'v9')
    with pytest.raises(olm.InputError, match='PackageManifest x not found'):
        olm.resolve_channel(None, None, 'x')


def test_only_the_plan_for_the_pinned_csv_is_approved():
    plans = [{'metadata': {'name': 'install-other'}, 'spec': {'approved': False, 'clusterServiceVersionNames': ['gpu.v99']}},
             {'metadata': {'name': 'install-pinned'}, 'spec': {'approved': False, 'clusterServiceVersionNames': ['gpu.v24.9.2']}}]
    assert olm.installplan_to_approve(plans, 'gpu.v24.9.2') == 'install-pinned'
    assert olm.installplan_to_approve(plans[:1], 'gpu.v24.9.2') is None
    plans[1]['spec']['approved'] = True
    assert olm.installplan_to_approve(plans, 'gpu.v24.9.2') is None


def test_second_operator_group_and_floor():
    groups = [{'metadata': {'name': 'mine', 'namespace': 'ns'}}, {'metadata': {'name': 'theirs', 'namespace': 'ns'}}]
    assert 'OperatorGroup theirs' in olm.operator_groups_problem(groups, 'mine')
    assert olm.operator_groups_problem(groups[:1], 'mine') == ''
    assert olm.below_floor('gpu-operator-certified.v23.9.1', '24.9.0') and not olm.below_floor('nfd.4.17.0-2024', '4.16.0')


def test_floor_reports_name_each_operator_below_its_floor():
    def subscription(operator, installed):
        return {'metadata': {'name': operator['subscription'], 'namespace': operator['namespace']}, 'status': {'installedCSV': installed}}
    first, second = catalog.OPERATORS[:2]
    old = '%s.v0.0.1' % first['package']
    reports = olm.floor_reports(catalog.OPERATORS, [subscription(first, old), subscription(second, '%s.v999.0.0' % second['package'])])
    assert reports == ['%s: installed %s is older than the floor %s; upgrade it through its Subscription' % (first['title'], old, first['floor'])]
    assert olm.floor_reports(catalog.OPERATORS, []) == []


@pytest.mark.parametrize('kind,status,expected', [
    ('ClusterServiceVersion', {'phase': 'Installing'}, 'pending'),
    ('ClusterServiceVersion', {'phase': 'Failed', 'reason': 'TooManyOperatorGroups', 'message': 'many'}, 'failed'),
    ('ClusterServiceVersion', {'phase': 'Succeeded'}, 'ready'),
    ('InstallPlan', {'phase': 'RequiresApproval'}, 'pending'),
    ('InstallPlan', {'phase': 'Complete'}, 'ready'),
    ('NicClusterPolicy', {'state': 'notReady'}, 'pending'),
    ('NicClusterPolicy', {'state': 'ignore', 'reason': 'name'}, 'failed'),
    ('ClusterPolicy', {'state': 'ready'}, 'ready'),
    ('SriovNetworkNodeState', {'syncStatus': 'Failed', 'lastSyncError': 'numVfs'}, 'failed'),
    ('SriovNetworkNodeState', {'syncStatus': 'InProgress'}, 'pending'),
    ('CatalogSource', {'connectionState': {'lastObservedState': 'TRANSIENT_FAILURE'}}, 'pending'),
])
def test_verdicts(kind, status, expected):
    obj = {'kind': kind, 'metadata': {'name': 'x', 'namespace': 'ns', 'generation': 1}, 'status': status}
    assert readiness.verdict([obj], kind=kind).split(':')[0] == expected


def test_machine_config_pool_waits_for_its_generation():
    pool = {'kind': 'MachineConfigPool', 'metadata': {'name': 'worker', 'generation': 3},
            'status': {'observedGeneration': 2, 'conditions': [{'type': 'Updated', 'status': 'True'}, {'type': 'Updating', 'status': 'False'}]}}
    assert readiness.verdict([pool]).startswith('pending')
    pool['status']['observedGeneration'] = 3
    assert readiness.verdict([pool]) == 'ready'


def test_progress_names_operator_phase_and_message():
    planned = [dict(catalog.OPERATORS[3], channel='v24.9', csv='gpu-operator-certified.v24.9.2')]
    sub = {'metadata': {'name': 'gpu-operator-certified', 'namespace': 'nvidia-gpu-operator'},
           'status': {'installPlanRef': {'name': 'install-a'}, 'currentCSV': 'gpu-operator-certified.v24.9.2'}}
    csv = {'kind': 'ClusterServiceVersion', 'metadata': {'name': 'gpu-operator-certified.v24.9.2', 'namespace': 'nvidia-gpu-operator'},
           'status': {'phase': 'Failed', 'reason': 'InstallComponentFailed', 'message': 'deployment gpu-operator not available'}}
    verdict = olm.progress([csv], planned, 'ClusterServiceVersion', [sub])
    assert verdict.startswith('failed: NVIDIA GPU Operator: phase ClusterServiceVersion:')
    assert 'InstallComponentFailed' in verdict and 'deployment gpu-operator not available' in verdict
    assert olm.progress([], planned, 'CustomResourceDefinition', [sub]).startswith('pending: NVIDIA GPU Operator')


# perftest ----------------------------------------------------------------------------------------------
CHAPTER_OUTPUT = """---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      10329004         0.00               180.47 		   0.344228
---------------------------------------------------------------------------------------
"""


def test_parser_on_the_chapters_result_line():
    line = re.search(r'a line `([^`]+)`', section(10)).group(1)
    assert line.split() == CHAPTER_OUTPUT.splitlines()[4].split()
    parsed = perftest.parse(CHAPTER_OUTPUT)
    assert (parsed['bw_average_gbps'], parsed['bw_peak_gbps'], parsed['msg_rate_mpps']) == (180.47, 0.0, 0.344228)
    verdict = perftest.evaluate(parsed, link_gbps=200)
    assert verdict['verdict'] == 'PASS' and verdict['threshold_gbps'] == 150.0
    assert perftest.evaluate(parsed, link_gbps=400)['verdict'] == 'FAIL'


def test_a_verdict_on_stand_in_output_says_so():
    label = '[aiinfra sandbox stand-in: synthetic output, no GPU/NCCL/host access]\n'
    measured = perftest.evaluate(perftest.parse(CHAPTER_OUTPUT), link_gbps=200)
    assert not measured['synthetic'] and measured['summary'].startswith('PASS -- BW average 180.47 Gb/s (threshold 150.00 Gb/s)')
    made_up = perftest.evaluate(perftest.parse(label + CHAPTER_OUTPUT), link_gbps=200)
    assert made_up['synthetic'] and made_up['summary'].startswith('STAND-IN OUTPUT (synthetic numbers, nothing measured): PASS -- ')


def test_parser_on_public_output():
    with open(os.path.join(TESTS, 'fixtures', 'perftest', 'spark_ib_write_bw_q4.txt'), encoding='utf-8') as handle:
        parsed = perftest.parse(handle.read())
    assert (parsed['test'], parsed['device'], parsed['link_type']) == ('RDMA_Write BW Test', 'rocep1s0f1', 'IB')
    assert (parsed['bw_average_gbps'], parsed['bw_peak_gbps'], parsed['msg_rate_mpps']) == (111.71, 111.72, 0.21307)


def test_parser_megabytes_and_refusals():
    text = CHAPTER_OUTPUT.replace('[Gb/sec]', '[MB/sec]').replace('180.47', '22558.75')
    assert perftest.parse(text)['bw_average_gbps'] == pytest.approx(180.47, abs=0.01)
    with pytest.raises(ValueError, match='no perftest result table'):
        perftest.parse('Couldn\'t connect to 192.168.2.3:10000')
    with pytest.raises(ValueError, match='no rows'):
        perftest.parse(CHAPTER_OUTPUT.splitlines()[3] + '\n')


def test_report_files():
    parsed = perftest.parse(CHAPTER_OUTPUT)
    files = perftest.render(perftest.build_report(parsed, perftest.evaluate(parsed, 200), 'sriov_legacy/roce'))
    assert json.loads(files['report.json'])['verdict']['verdict'] == 'PASS'
    assert '<testsuite name="ib_write_bw" tests="1" failures="0">' in files['junit.xml']
    assert '| 180.47 |' in files['summary.md']
    assert perftest.link_rate('\t\tRate: 200\n') == 200.0


def test_holds_ignores_defaults_and_compares_quantities_as_text():
    pod = render.test_pods({'method': 'shared_device', 'link': 'roce'}, ['a', 'b'])[0]
    live = copy.deepcopy(pod)
    live['spec']['containers'][0].update({'terminationMessagePath': '/dev/termination-log', 'resources': {
        'limits': {'nvidia.com/gpu': '1', 'rdma/rdma_shared_device_eth': '1'},
        'requests': {'nvidia.com/gpu': '1', 'rdma/rdma_shared_device_eth': '1'}}})
    live['status'] = {'phase': 'Running'}
    assert applied.holds(live, pod)
    live['spec']['containers'][0]['image'] = 'other'
    assert not applied.holds(live, pod)
    assert not applied.holds({}, pod)


def test_numbers_given_on_the_command_line_are_typed_as_the_argument_spec_says():
    """-e openshift_rdma_mtu=9000 arrives as the string '9000': it is 9000, as Ansible's argument specs convert it; a value
    that is no number is still named."""
    given = {'method': 'sriov_legacy', 'link': 'roce', 'mtu': '9000', 'num_vfs': '8', 'threshold_fraction': '0.5', 'link_gbps': '200'}
    typed = render.typed_options(given)
    assert (typed['mtu'], typed['num_vfs'], typed['threshold_fraction'], typed['link_gbps']) == (9000, 8, 0.5, 200.0)
    assert render.problems(typed) == []
    bad = render.typed_options(dict(given, mtu='jumbo', threshold_fraction='half'))
    assert render.problems(bad) == ["openshift_rdma_mtu='jumbo' must be an integer from 576 to 9216",
                                    "openshift_rdma_threshold_fraction='half' must be a number in (0, 1]"]


# The fabric diagnosis (openshift_rdma_proof_mode diagnose) ---------------------------------------------------------
def test_diagnosis_pods_one_per_node_with_every_gpu_and_fewer_than_two_nodes_refused():
    options = {'method': 'shared_device', 'link': 'roce'}
    pods = render.diagnosis_pods(options, ['w0', 'w1', 'w2'], gpus=8)
    assert [p['metadata']['name'] for p in pods] == ['rdma-shared-device-roce-diag-%d' % n for n in range(3)]
    assert [p['spec']['nodeSelector']['kubernetes.io/hostname'] for p in pods] == ['w0', 'w1', 'w2']
    limits = pods[0]['spec']['containers'][0]['resources']['limits']
    assert limits == {'nvidia.com/gpu': 8, 'rdma/rdma_shared_device_eth': 1}
    with pytest.raises(InputError, match='openshift_rdma_proof_mode: diagnose tests pairs of nodes; the selector matches 1 node'):
        render.diagnosis_pods(options, ['w0'])


def test_diagnosis_processes_a_pair_runs_every_hca_a_per_hca_run_its_one():
    hcas = ['mlx5_0', 'mlx5_1', 'mlx5_2']
    runs = [{'hosts': ['w2', 'w0'], 'nic': None, 'round': 2}, {'hosts': ['w3', 'w1'], 'nic': 'mlx5_2', 'round': 2}]
    processes = render.diagnosis_processes(runs, hcas, 2, ['w0', 'w1', 'w2', 'w3'], 2)
    assert [(p['run'], p['hca'], p['gpu'], p['port'], p['client'], p['server']) for p in processes] == [
        (0, 'mlx5_0', 0, 10200, 2, 0), (0, 'mlx5_1', 1, 10201, 2, 0), (0, 'mlx5_2', 0, 10202, 2, 0), (1, 'mlx5_2', 0, 10202, 3, 1)]


def test_per_hca_ib_write_bw_command_drops_rdma_cm_and_names_the_device():
    command = render.ib_write_bw_command('mlx5_3', '192.168.2.1', '192.168.2.2', 3, 10103, False)
    assert '-R' not in command and '--source_ip' not in command
    assert command[command.index('-d') + 1] == 'mlx5_3' and '--use_cuda=3' in command and command[-1] == '192.168.2.2'
    assert render.ib_write_bw_command('mlx5_0', '192.168.2.1') == [
        catalog.IB_WRITE_BW, *catalog.IB_WRITE_BW_FLAGS, '-d', 'mlx5_0', '-p', '10000', '--source_ip', '192.168.2.1',
        '--use_cuda=0', '--use_cuda_dmabuf']

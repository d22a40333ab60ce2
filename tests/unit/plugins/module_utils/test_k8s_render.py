"""Render functions of plugins/module_utils/k8s (GPUDirect on GKE): every rendered built-in object is valid
under kubernetes-validate --strict for the cluster minors the seeds allow, every custom resource is valid
against its CRD (../shared/crds, vendored for the stand-in under tests/sandbox/kube/crds), the rendered
objects match the seeds' and the vendor's manifests field by field (differences listed with the reason),
the workload filter is idempotent and refuses what it cannot safely change, and k8s_verdict judges each
kind at the object's current generation."""

from __future__ import annotations

import copy
import json
import os

import jsonschema
import kubernetes_validate
import kubernetes_validate.utils
import pytest
import yaml

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import readiness, render, workload
from sandbox.kube import vendored
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
CRDS = os.path.join(TESTS, 'sandbox', 'kube', 'crds')
SEED_MANIFESTS = os.path.join(TESTS, 'sandbox', 'kube', 'manifests', 'seeds')
COMPUTE_CLASS_SCHEMA = os.path.join(TESTS, 'fixtures', 'crds', 'cloud.google.com', 'ComputeClass.schema%s.json')
# Minors per technology: TCPX / TCPXO floors name 1.27..1.30 (seed 003) and the stand-in tests run 1.33;
# RDMA needs resource.k8s.io/v1, served from 1.34 (seed 001's floor is 1.34.8).
MINORS = {'TCPXO': ('1.30', '1.33'), 'TCPX': ('1.27', '1.33'), 'RDMA': ('1.34', '1.35')}


def crd_schema(kind):
    with open(os.path.join(CRDS, kind + '.yaml'), encoding='utf-8') as handle:
        crd = yaml.safe_load(handle)
    version = next(v for v in crd['spec']['versions'] if v['storage'])
    return crd['spec']['group'] + '/' + version['name'], version['schema']['openAPIV3Schema']


def strict(schema):
    """The CRD schema with unknown fields refused (fieldValidation=Strict), as the API server prunes/refuses them."""
    schema = copy.deepcopy(schema)
    if schema.get('type') == 'object' and 'properties' in schema and not schema.get('x-kubernetes-preserve-unknown-fields'):
        schema.setdefault('additionalProperties', False)
        schema['properties'] = {k: strict(v) for k, v in schema['properties'].items()}
        schema['properties'].setdefault('apiVersion', {'type': 'string'})
        schema['properties'].setdefault('kind', {'type': 'string'})
        schema['properties'].setdefault('metadata', {'type': 'object'})
    if 'items' in schema:
        schema['items'] = strict(schema['items'])
    return schema


def compute_class_schema(extended=True):
    """The public ComputeClass schema (strict: additionalProperties false), with the two corrections of
    ComputeClass.schema.extension.json (README.md beside it) unless ``extended`` is False."""
    with open(COMPUTE_CLASS_SCHEMA % '', encoding='utf-8') as handle:
        schema = json.load(handle)
    with open(COMPUTE_CLASS_SCHEMA % '.extension', encoding='utf-8') as handle:
        patch = json.load(handle)
    assert [(op['op'], op['path']) for op in patch] == [
        ('add', '/properties/spec/properties/priorities/items/properties/gpuDirect'),
        ('remove', '/properties/spec/required')], 'the extension corrects exactly the two points README.md names'
    for op in patch if extended else ():
        *parents, last = op['path'].strip('/').split('/')
        node = schema
        for part in parents:
            node = node[part]
        if op['op'] == 'add':
            assert last not in node
            node[last] = op['value']
        else:
            assert node.pop(last) == op['value']
    return schema


def validate(obj, minor):
    if obj['kind'] == 'ComputeClass':
        jsonschema.validate(obj, compute_class_schema())
    elif obj['kind'] in ('Network', 'GKENetworkParamSet'):
        api_version, schema = crd_schema(obj['kind'])
        assert obj['apiVersion'] == api_version
        jsonschema.validate(obj, strict(schema))
    else:
        kubernetes_validate.validate(obj, minor, strict=True)


@pytest.mark.parametrize('technology', ['TCPXO', 'TCPX'])
def test_gpudirect_objects_are_valid_for_the_cluster_minors(technology):
    objects = render.gke_network_objects(technology, 'demo') + render.gke_daemonsets(technology, node_pool='a3')
    objects += render.nccl_test_objects(technology, 'nccl')
    for minor in MINORS[technology]:
        for obj in objects:
            validate(obj, minor)


def test_rdma_objects_are_valid_for_the_cluster_minors():
    objects = [render.rdma_claim_template('nccl')] + render.nccl_test_objects('RDMA', 'nccl')
    for minor in MINORS['RDMA']:
        for obj in objects:
            validate(obj, minor)
    with pytest.raises(kubernetes_validate.utils.SchemaNotFoundError):
        kubernetes_validate.validate(render.rdma_claim_template(), '1.33', strict=True)   # resource.k8s.io/v1 is 1.34+


def test_validation_can_fail():
    bad = render.gke_network_objects('TCPX', 'demo')[0]
    bad['spec']['deviceMode'] = 'Netdevice'
    with pytest.raises(jsonschema.ValidationError):
        validate(bad, '1.33')
    daemonset = render.gke_daemonsets('TCPX')[0]
    daemonset['spec']['template']['spec']['hostNetworking'] = True
    with pytest.raises(Exception, match='hostNetworking'):
        validate(daemonset, '1.33')


@pytest.mark.parametrize('technology,count', [('TCPXO', 8), ('TCPX', 4)])
def test_networks_equal_the_seeds_objects(technology, count):
    # The seed's objects (vendored for the stand-in from seed 003 "Crea el entorno de GKE"): names vpcN, VPC PREFIX-net-N.
    with open(os.path.join(SEED_MANIFESTS, '003-%s-networks.yaml' % technology.lower()), encoding='utf-8') as handle:
        seed = [doc for doc in yaml.safe_load_all(handle) if doc]
    prefix = seed[-1]['spec']['vpc'].rsplit('-net-', 1)[0]
    rendered = render.gke_network_objects(technology, prefix)

    def key(obj):
        return obj['kind'], obj['metadata']['name']
    assert sorted(rendered, key=key) == sorted(seed, key=key)
    assert len(rendered) == 2 * count


def test_networks_from_a_list_and_bad_counts():
    vpcs = [{'network': 'projects/p/global/networks/n%d' % i, 'subnetwork': 'projects/p/regions/r/subnetworks/s%d' % i} for i in range(4)]
    objects = render.gke_network_objects('TCPX', networks=vpcs)
    assert objects[0]['spec'] == {'vpc': 'n0', 'vpcSubnet': 's0', 'deviceMode': 'NetDevice'}
    with pytest.raises(InputError, match='networks: GPUDirect-TCPXO needs 8 data VPCs'):
        render.gke_network_objects('TCPXO', networks=vpcs)
    with pytest.raises(InputError, match='network_prefix'):
        render.gke_network_objects('TCPXO')
    with pytest.raises(InputError, match='technology'):
        render.gke_network_objects('RDMA', 'x')


@pytest.mark.parametrize('technology', ['TCPXO', 'TCPX'])
def test_daemonsets_differ_from_the_vendor_only_in_image_and_node_selection(technology):
    rendered = render.gke_daemonsets(technology, node_pool='pool-a')
    vendor = [render.load_manifest(render.INSTALLER_MANIFESTS[technology])[0], render.load_manifest(render.NRI_MANIFEST)[0]]
    for ours, theirs in zip(rendered, vendor):
        ours, theirs = copy.deepcopy(ours), copy.deepcopy(theirs)
        affinity = ours['spec']['template']['spec'].pop('affinity')
        theirs['spec']['template']['spec'].pop('affinity')
        terms = affinity['nodeAffinity']['requiredDuringSchedulingIgnoredDuringExecution']['nodeSelectorTerms']
        # Difference 1 (on purpose): only this technology's accelerator (the vendor's NRI injector lists four) and the pool.
        assert terms == [{'matchExpressions': [
            {'key': 'cloud.google.com/gke-accelerator', 'operator': 'In', 'values': render.gke_accelerators(technology)},
            {'key': 'cloud.google.com/gke-nodepool', 'operator': 'In', 'values': ['pool-a']}]}]
        assert ours == theirs or ours['metadata']['name'].startswith('nccl-')
    # Difference 2 (on purpose): the installer image is the catalog's GKE version pair (equal to the vendor's today).
    # The role finds the DaemonSets and their Pods by label k8s-app = the DaemonSet's name.
    assert all(d['metadata']['labels']['k8s-app'] == d['metadata']['name'] == d['spec']['template']['metadata']['labels']['k8s-app']
               for d in rendered)
    installer = rendered[0]['spec']['template']['spec']['initContainers'][-1]
    assert installer['image'].endswith({'TCPXO': ':v1.0.15', 'TCPX': ':v3.1.9'}[technology])
    assert installer['securityContext'] == {'privileged': True}


def test_daemonsets_take_another_plugin_image():
    installer = render.gke_daemonsets('TCPXO', plugin_image='registry.example/plugin:v9')[0]
    assert installer['spec']['template']['spec']['initContainers'][1]['image'] == 'registry.example/plugin:v9'
    assert installer['spec']['template']['spec']['initContainers'][0]['image'] == 'ubuntu'   # the vendor's pre-installation step


def test_claim_template_equals_seed_001():
    with open(os.path.join(SEED_MANIFESTS, '001-all-mrdma-template.yaml'), encoding='utf-8') as handle:
        assert render.rdma_claim_template() == yaml.safe_load(handle)


def test_nccl_test_exec_is_the_seeds_command():
    assert render.nccl_test_exec('TCPXO') == {
        'pod': 'nccl-test-host-1', 'container': 'nccl-test', 'command': '/scripts/allgather.sh nccl-host-1 nccl-host-2'}
    assert render.nccl_test_exec('TCPX')['command'] == '/configs/allgather.sh nccl-host-1 nccl-host-2'
    assert render.nccl_test_exec('RDMA')['command'] == ('/usr/local/gib/scripts/run_nccl_tests.sh -t all_gather -b 1K -e 8G '
                                                        'nccl-host-1 nccl-host-2')
    pods = [o for o in render.nccl_test_objects('RDMA') if o['kind'] == 'Pod']
    assert [c['name'] for c in pods[0]['spec']['containers']] == ['test']


# --- workload injection ---------------------------------------------------------------------------------

POD = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'train'},
       'spec': {'containers': [{'name': 'main', 'image': 'example/train:1', 'env': [{'name': 'NCCL_DEBUG', 'value': 'INFO'}]}]}}
JOBSET = {'apiVersion': 'jobset.x-k8s.io/v1alpha2', 'kind': 'JobSet', 'metadata': {'name': 'js'}, 'spec': {'replicatedJobs': [
    {'name': 'workers', 'replicas': 2, 'template': {'spec': {'template': {'spec': {'containers': [
        {'name': 'main', 'image': 'x', 'resources': {'limits': {'nvidia.com/gpu': 8}}}]}}}}}]}}


def _seed_pod(technology):
    """The seed's own test Pod (vendor manifest), as the reference for what the filter adds."""
    return next(o for o in render.nccl_test_objects(technology) if o['kind'] == 'Pod')


@pytest.mark.parametrize('technology', ['TCPXO', 'TCPX'])
def test_gpudirect_workload_adds_what_the_seed_adds_and_is_idempotent(technology):
    pod = workload.gpudirect_workload(POD, technology)
    assert workload.gpudirect_workload(pod, technology) == pod
    assert POD['spec']['containers'][0].get('resources') is None     # the input is not changed
    seed = _seed_pod(technology)
    annotations = seed['metadata']['annotations']
    for key in ('networking.gke.io/default-interface', 'devices.gke.io/container.%s-daemon' % technology.lower()):
        assert pod['metadata']['annotations'][key] == annotations[key]
    import json
    assert json.loads(pod['metadata']['annotations']['networking.gke.io/interfaces']) == json.loads(annotations['networking.gke.io/interfaces'])
    daemon = pod['spec']['containers'][1]
    seed_daemon = next(c for c in seed['spec']['containers'] if c['name'] == daemon['name'])
    assert daemon['image'] == seed_daemon['image'] and daemon['securityContext'] == seed_daemon['securityContext']
    main = pod['spec']['containers'][0]
    assert main['resources']['limits']['nvidia.com/gpu'] == 8
    env = {e['name']: e['value'] for e in main['env']}
    assert env['NCCL_DEBUG'] == 'INFO'        # the workload's own value is kept
    assert env['LD_LIBRARY_PATH'] == '/usr/local/nvidia/lib64' and '${' not in ''.join(env.values())
    assert {'name': 'shared-memory', 'mountPath': '/dev/shm'} in main['volumeMounts']
    kubernetes_validate.validate(pod, '1.33', strict=True)


def test_tcpx_socket_mount_follows_the_unix_client_prefix():
    """Seed 003's note: the tcpx-socket volume is at /tmp for GPU containers, and at NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX
    when that variable is set to another path."""
    def socket_mount(pod):
        return [m['mountPath'] for m in pod['spec']['containers'][0]['volumeMounts'] if m['name'] == 'tcpx-socket']
    assert socket_mount(workload.gpudirect_workload(POD, 'TCPX')) == ['/tmp']
    moved = copy.deepcopy(POD)
    moved['spec']['containers'][0]['env'].append({'name': 'NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX', 'value': '/run/tcpx-client'})
    pod = workload.gpudirect_workload(moved, 'TCPX')
    assert socket_mount(pod) == ['/run/tcpx-client']
    assert workload.gpudirect_workload(pod, 'TCPX') == pod
    kubernetes_validate.validate(pod, '1.33', strict=True)
    moved['spec']['containers'][0]['env'][-1]['value'] = 'run/tcpx'
    with pytest.raises(InputError, match='NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX.*not an absolute path'):
        workload.gpudirect_workload(moved, 'TCPX')


def test_gpudirect_workload_differences_from_the_seed_test_pod_are_the_seeds_own():
    # The daemon's args: the seed's "Agrega GPUDirect" snippet (--num_nics=8 --uid= --alsologtostderr), not the test Pod's shorter line.
    pod = workload.gpudirect_workload(POD, 'TCPXO')
    assert '--num_nics=8 --uid= --alsologtostderr' in pod['spec']['containers'][1]['args'][0]
    # The libraries volume: /home/kubernetes/bin/nvidia mounted at /usr/local/nvidia (the seed's full Pod spec; catalog note).
    assert {'name': 'libraries', 'hostPath': {'path': '/home/kubernetes/bin/nvidia'}} in pod['spec']['volumes']


def test_gpudirect_workload_on_deployment_job_and_jobset():
    deployment = {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {'name': 'd'}, 'spec': {
        'replicas': 2, 'selector': {'matchLabels': {'a': 'b'}},
        'template': {'metadata': {'labels': {'a': 'b'}}, 'spec': {'containers': [{'name': 'main', 'image': 'x'}]}}}}
    out = workload.gpudirect_workload(deployment, 'TCPX', nccl_env_mode='recommended')
    kubernetes_validate.validate(out, '1.33', strict=True)
    assert 'devices.gke.io/container.tcpx-daemon' in out['spec']['template']['metadata']['annotations']
    assert [c['name'] for c in out['spec']['template']['spec']['containers']] == ['main', 'tcpx-daemon']   # runs as long as it
    job = {'apiVersion': 'batch/v1', 'kind': 'Job', 'metadata': {'name': 'j'}, 'spec': {'template': {'spec': {
        'restartPolicy': 'Never', 'containers': [{'name': 'main', 'image': 'x'}]}}}}
    out = workload.gpudirect_workload(job, 'TCPXO', nccl_env_mode='profile')
    kubernetes_validate.validate(out, '1.33', strict=True)
    # A Job completes: the daemon is a native sidecar, which the kubelet stops once main has exited (the accelerators
    # repository's best practice); as a container it would keep the Pod, and so the Job, running.
    pod_spec = out['spec']['template']['spec']
    assert [c['name'] for c in pod_spec['containers']] == ['main']
    assert [(c['name'], c['restartPolicy']) for c in pod_spec['initContainers']] == [('tcpxo-daemon', 'Always')]
    assert workload.gpudirect_workload(out, 'TCPXO', nccl_env_mode='profile') == out
    out = workload.gpudirect_workload(JOBSET, 'TCPXO')
    inner = out['spec']['replicatedJobs'][0]['template']['spec']['template']
    assert [c['name'] for c in inner['spec']['containers']] == ['main']
    assert [(c['name'], c['restartPolicy']) for c in inner['spec']['initContainers']] == [('tcpxo-daemon', 'Always')]


@pytest.mark.parametrize('change,message', [
    (lambda p: p['spec']['containers'][0].update(resources={'limits': {'nvidia.com/gpu': 4}}), 'request 8'),
    (lambda p: p['spec'].update(hostNetwork=True), 'hostNetwork'),
    (lambda p: p['metadata'].update(annotations={'networking.gke.io/default-interface': 'eth1'}), 'default-interface'),
    (lambda p: p['spec'].update(volumes=[{'name': 'sys', 'hostPath': {'path': '/other'}}]), "name 'sys' already exists"),
    (lambda p: p['spec']['containers'].append({'name': 'side', 'image': 'y'}), 'several containers'),
    (lambda p: p.update(kind='Service'), "kind 'Service'"),
])
def test_gpudirect_workload_refusals(change, message):
    pod = copy.deepcopy(POD)
    change(pod)
    with pytest.raises(InputError, match=message):
        workload.gpudirect_workload(pod, 'TCPXO')


def test_gpudirect_workload_bad_options():
    with pytest.raises(InputError, match='nccl_env: profile is a GPUDirect-TCPXO option'):
        workload.gpudirect_workload(POD, 'TCPX', nccl_env_mode='profile')
    with pytest.raises(InputError, match='nccl_env'):
        workload.gpudirect_workload(POD, 'TCPX', nccl_env_mode='all')


def test_rdma_workload_matches_seed_001_test_pod():
    seed = next(o for o in render.nccl_test_objects('RDMA') if o['kind'] == 'Pod')
    bare = copy.deepcopy(seed)
    bare['spec'] = {'containers': [{k: v for k, v in seed['spec']['containers'][0].items() if k in ('name', 'image', 'command', 'args')}]}
    rendered = workload.rdma_workload(bare)
    assert rendered['spec']['resourceClaims'] == seed['spec']['resourceClaims']
    assert sorted(rendered['spec']['volumes'], key=str) == sorted(seed['spec']['volumes'], key=str)
    ours, theirs = rendered['spec']['containers'][0], seed['spec']['containers'][0]
    # The collection's own run adds NCCL's debug variables (NCCL names its network and versions) after the seed's env.
    assert ours['volumeMounts'] == theirs['volumeMounts'] and ours['env'] == theirs['env'][:len(ours['env'])]
    assert theirs['env'][len(ours['env']):] == [{'name': 'NCCL_DEBUG', 'value': 'INFO'}, {'name': 'NCCL_DEBUG_SUBSYS', 'value': 'INIT,NET'}]
    assert ours['resources']['limits'] == theirs['resources']['limits'] and ours['resources']['claims'] == theirs['resources']['claims']
    # Difference (on purpose): the seed's cpu request of 150m is its test's choice, not a GPUDirect need.
    assert 'requests' not in ours['resources']
    assert workload.rdma_workload(rendered) == rendered
    kubernetes_validate.validate(rendered, '1.34', strict=True)


def test_rdma_workload_refuses_the_multi_network_mix():
    pod = copy.deepcopy(POD)
    pod['metadata']['annotations'] = {'networking.gke.io/interfaces': '[]'}
    with pytest.raises(InputError, match='multi-network API and DRANET cannot share a node pool'):
        workload.rdma_workload(pod)


# --- k8s_verdict ---------------------------------------------------------------------------------------

def ds(generation=1, observed=1, desired=2, ready=2, updated=2):
    return {'kind': 'DaemonSet', 'metadata': {'name': 'i', 'namespace': 'kube-system', 'generation': generation},
            'status': {'observedGeneration': observed, 'desiredNumberScheduled': desired, 'numberReady': ready,
                       'updatedNumberScheduled': updated, 'numberAvailable': ready}}


def test_verdict_daemonset():
    assert readiness.verdict(ds(), {'nodes': 2}) == 'ready'
    assert readiness.verdict([ds(ready=1)], {'nodes': ['a', 'b']}).startswith('pending: DaemonSet kube-system/i numberReady 1 of 2')
    assert readiness.verdict(ds(generation=2), {'nodes': 2}).startswith('pending')
    # Zero desired pods passes kubernetes.core's wait at once; here it fails with the reason.
    assert readiness.verdict(ds(desired=0, ready=0, updated=0), {'nodes': 2}).startswith(
        'failed: DaemonSet kube-system/i it schedules on 0 nodes where 2 GPU nodes are expected')
    assert readiness.verdict(ds(desired=0, ready=0, updated=0)).startswith('failed')
    # Nodes registered a moment ago that the DaemonSet controller has not counted yet: pending, not failed; more: failed.
    assert readiness.verdict(ds(desired=234, ready=234, updated=234), {'nodes': 256}).startswith(
        'pending: DaemonSet kube-system/i it schedules on 234 of the 256 GPU nodes so far')
    assert readiness.verdict(ds(desired=3, ready=3, updated=3), {'nodes': 2}).startswith(
        'failed: DaemonSet kube-system/i it schedules on 3 nodes where 2 GPU nodes are expected')
    assert 'no node is expected' in readiness.verdict(ds(), {'nodes': 0})


def test_verdict_stale_ready_condition_is_pending():
    network = {'kind': 'Network', 'metadata': {'name': 'vpc1', 'generation': 3},
               'status': {'conditions': [{'type': 'Ready', 'status': 'True', 'observedGeneration': 2}]}}
    assert readiness.verdict(network) == 'pending: Network vpc1 Ready=True is for generation 2, the object is at generation 3'
    network['status']['conditions'][0]['observedGeneration'] = 3
    assert readiness.verdict(network) == 'ready'
    network['status']['conditions'][0]['status'] = 'False'
    assert readiness.verdict(network).startswith('pending')
    assert readiness.verdict([]) == 'pending: not found'


def test_verdict_pods_and_others():
    running = {'kind': 'Pod', 'metadata': {'name': 'p'}, 'spec': {'nodeName': 'n1'},
               'status': {'phase': 'Running', 'conditions': [{'type': 'Ready', 'status': 'True'}]}}
    failed = {'kind': 'Pod', 'metadata': {'name': 'q'}, 'status': {'phase': 'Failed'}}
    pending = {'kind': 'Pod', 'metadata': {'name': 'r'}, 'status': {'phase': 'Pending', 'conditions': [
        {'type': 'PodScheduled', 'status': 'False', 'message': '0/3 nodes are available'}]}}
    assert readiness.verdict(running) == 'ready'
    assert readiness.verdict([running, pending, failed]).startswith('failed: Pod q')
    assert readiness.verdict([running, pending]) == 'pending: Pod r not scheduled: 0/3 nodes are available'
    assert readiness.verdict({'kind': 'Service', 'metadata': {'name': 's'}}) == 'ready'
    assert readiness.nodes_without_ready_pod(['n1', 'n2'], [running, pending]) == ['n2']
    status = {'annotations': ['k8s.v1.cni.cncf.io/network-status']}
    assert readiness.verdict(running, status) == 'pending: Pod p no annotation k8s.v1.cni.cncf.io/network-status yet'
    attached = dict(running, metadata={'name': 'p', 'annotations': {'k8s.v1.cni.cncf.io/network-status': '[]'}})
    assert readiness.verdict(attached, status) == 'ready'


# --- seed 001: ComputeClass, manual multi-network objects, RDMA installer ---------------------------------

def seed_compute_class():
    with open(os.path.join(SEED_MANIFESTS, '001-rdma-compute-class.yaml'), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def test_the_public_compute_class_schema_refuses_seed_001_and_the_extended_one_accepts_it():
    seed = seed_compute_class()
    with pytest.raises(jsonschema.ValidationError, match='gpuDirect'):
        jsonschema.validate(seed, compute_class_schema(extended=False))
    no_gpudirect = copy.deepcopy(seed)
    del no_gpudirect['spec']['priorities'][0]['gpuDirect']
    with pytest.raises(jsonschema.ValidationError, match='whenUnsatisfiable'):
        jsonschema.validate(no_gpudirect, compute_class_schema(extended=False))
    jsonschema.validate(seed, compute_class_schema())
    # Everything else stays strict: an unknown field, a bad enum, a bad type.
    for path, value in ((('spec', 'priorities', 0, 'gpuDirekt'), 'rdma'), (('spec', 'priorities', 0, 'reservations', 'affinity'), 'specific'),
                        (('spec', 'nodePoolAutoCreation', 'enabled'), 'yes')):
        bad = copy.deepcopy(seed)
        node = bad
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, compute_class_schema())


def test_compute_class_equals_seed_001():
    rendered = render.rdma_compute_class('rdma-class', [{'machine_type': 'a3-ultragpu-8g', 'reservation': 'my-reservation',
                                                         'reservation_zones': ['us-central1-b']}])
    assert rendered == seed_compute_class()
    validate(rendered, None)


def test_compute_class_priorities_family_spot_block_and_a4():
    rendered = render.rdma_compute_class('mixed', [
        {'machine_type': 'a4-highgpu-8g', 'reservation': 'r', 'reservation_zones': ['us-central1-b'], 'reservation_project': 'p',
         'reservation_block': 'b1', 'gpu_driver_version': 'latest'},
        {'machine_type': 'a4-highgpu-8g', 'by_family': True, 'spot': True}])
    validate(rendered, None)
    first, second = rendered['spec']['priorities']
    assert first['gpu'] == {'type': 'nvidia-b200', 'count': 8, 'driverVersion': 'latest'} and first['machineType'] == 'a4-highgpu-8g'
    assert first['reservations']['specific'] == [{'name': 'r', 'zones': ['us-central1-b'], 'project': 'p', 'reservationBlock': {'name': 'b1'}}]
    assert second['machineFamily'] == 'a4' and second['spot'] is True and 'machineType' not in second
    assert all(p['gpuDirect'] == 'rdma' and p['acceleratorNetworkProfile'] == 'auto' for p in rendered['spec']['priorities'])


@pytest.mark.parametrize('name, priorities, words', [
    ('rdma', [{'machine_type': 'a3-megagpu-8g'}], ['priorities[0].machine_type', 'a3-ultragpu-8g']),
    ('rdma', [], ['at least one priority']),
    ('RDMA_class', [{'machine_type': 'a3-ultragpu-8g'}], ['not a valid ComputeClass name']),
    ('rdma', [{'machine_type': 'a3-ultragpu-8g', 'reservation_zones': ['us-central1-b']}], ['reservation_zones', 'give reservation too']),
    ('rdma', [{'machine_type': 'a3-ultragpu-8g', 'reservation': 'r'}], ['reservation_zones', 'RESERVATION_ZONE']),
    ('rdma', [{'machine_type': 'a3-ultragpu-8g', 'reservation': 'r', 'reservation_zones': ['z'], 'spot': True}], ['spot']),
    ('rdma', [{'machine_type': 'a3-ultragpu-8g', 'gpudirect': 'rdma'}], ['unknown key(s) gpudirect']),
    ('rdma', [{'machine_type': 'a3-ultragpu-8g', 'gpu_driver_version': 'LATEST_535'}], ['gpu_driver_version']),
])
def test_compute_class_refusals(name, priorities, words):
    with pytest.raises(InputError) as error:
        render.rdma_compute_class(name, priorities)
    for word in words:
        assert word in str(error.value), str(error.value)


@pytest.mark.parametrize('change, words', [
    (lambda cc: cc['spec']['priorities'][0].pop('gpuDirect'), ['gpuDirect', 'rdma']),
    (lambda cc: cc['spec']['priorities'][0].update(acceleratorNetworkProfile='auto-custom'), ['acceleratorNetworkProfile']),
    (lambda cc: cc['spec'].pop('nodePoolConfig'), ['dra.networking.enabled']),
    (lambda cc: cc['spec']['nodePoolAutoCreation'].update(enabled=False), ['nodePoolAutoCreation']),
    (lambda cc: cc['spec']['priorities'][0]['gpu'].update(type='nvidia-h100-mega-80gb'), ['not an A3 Ultra or A4']),
])
def test_a_users_compute_class_is_checked(change, words):
    user = seed_compute_class()
    assert render.check_rdma_compute_class(copy.deepcopy(user)) == user
    change(user)
    with pytest.raises(InputError) as error:
        render.check_rdma_compute_class(user)
    for word in words:
        assert word in str(error.value), str(error.value)


def test_manual_multi_network_objects_are_what_the_vendor_test_pods_attach_to():
    objects = render.rdma_network_objects('ultra')
    for obj in objects:
        validate(obj, None)
    params = [o for o in objects if o['kind'] == 'GKENetworkParamSet']
    assert [(o['metadata']['name'], o['spec']['vpc'], o['spec']['vpcSubnet'], o['spec']['deviceMode']) for o in params] == \
        [('gvnic-1', 'ultra-gvnic-net', 'ultra-gvnic-sub', 'NetDevice')] + \
        [('rdma-%d' % n, 'ultra-rdma-net', 'ultra-rdma-sub-%d' % n, 'RDMA') for n in range(8)]
    networks = [o for o in objects if o['kind'] == 'Network']
    assert all(n['spec']['parametersRef']['name'] == n['metadata']['name'] and n['spec']['type'] == 'Device' for n in networks)
    # The vendor's RDMA test Pods (gpudirect-rdma/nccl-test.yaml) attach to rdma-0..rdma-7 by these names.
    with open(vendored.path('gpudirect-rdma/nccl-test.yaml'), encoding='utf-8') as handle:
        pod = next(d for d in yaml.safe_load_all(handle) if d and d['kind'] == 'Pod')
    attached = [i['network'] for i in json.loads(pod['metadata']['annotations']['networking.gke.io/interfaces']) if i['network'] != 'default']
    assert attached == [o['metadata']['name'] for o in params if o['spec']['deviceMode'] == 'RDMA']
    # From the node pool's additional networks (the module's result) the objects are the same.
    pool = [{'network': 'projects/p/global/networks/%s' % n, 'subnetwork': 'projects/p/regions/r/subnetworks/%s' % s}
            for n, s in [('ultra-gvnic-net', 'ultra-gvnic-sub')] + [('ultra-rdma-net', 'ultra-rdma-sub-%d' % i) for i in range(8)]]
    assert render.rdma_network_objects(networks=pool) == objects


def test_manual_multi_network_test_pods_differ_from_the_vendor_only_in_image_and_the_cpu_request():
    """Seed 001's manual variant: the vendor's test Pods (gpudirect-rdma/nccl-test.yaml), compared with the file as
    kubectl's YAML reader would see it, and each difference listed with its reason."""
    with open(vendored.path('gpudirect-rdma/nccl-test.yaml'), encoding='utf-8') as handle:
        text = handle.read()
    vendor = [d for d in yaml.safe_load_all(text) if d]
    ours = render.nccl_test_objects('RDMA', multi_network=True)
    assert [(o['kind'], o['metadata']['name']) for o in ours] == [(o['kind'], o['metadata']['name']) for o in vendor]
    dranet_pod = _seed_pod('RDMA')
    for mine, theirs in zip(ours, vendor):
        if mine['kind'] != 'Pod':
            assert mine == theirs
            continue
        # The annotation attaches eth0 to the default network and eth2..eth9 to rdma-0..rdma-7 (the vendor's, kept).
        interfaces = json.loads(mine['metadata']['annotations']['networking.gke.io/interfaces'])
        assert [(i['interfaceName'], i['network']) for i in interfaces] == \
            [('eth0', 'default')] + [('eth%d' % (n + 2), 'rdma-%d' % n) for n in range(8)]
        assert mine['metadata']['annotations']['networking.gke.io/default-interface'] == 'eth0'
        assert 'resourceClaims' not in mine['spec'], 'the manual variant attaches NICs by annotation, not by the all-mrdma claim'
        test, vendor_test = mine['spec']['containers'][0], theirs['spec']['containers'][0]
        # Difference 1: the image is seed 001's (v1.1.2, the catalog's); the vendor file still names v1.1.1.
        assert (vendor_test['image'].rsplit(':', 1)[1], test['image']) == ('v1.1.1', dranet_pod['spec']['containers'][0]['image'])
        # Difference 2: the vendor file writes `resources:` twice in the container; a YAML reader keeps the last (the
        # GPU limit) and drops the cpu request.  Both are meant: the same container of seed 001's DRANET Pod has both.
        assert text.count('      resources:\n') == 4 and vendor_test['resources'] == {'limits': {'nvidia.com/gpu': 8}}
        assert test['resources'] == {'limits': {'nvidia.com/gpu': 8}, 'requests': dranet_pod['spec']['containers'][0]['resources']['requests']}
        # Difference 3: the collection's own run adds NCCL's debug variables (NCCL names its network and versions).
        assert test['env'] == vendor_test['env'] + [{'name': 'NCCL_DEBUG', 'value': 'INFO'}, {'name': 'NCCL_DEBUG_SUBSYS', 'value': 'INIT,NET'}]
        test = dict(test, image=vendor_test['image'], resources=vendor_test['resources'], env=vendor_test['env'])
        assert dict(mine, spec=dict(mine['spec'], containers=[test])) == theirs, 'nothing else differs'
        # The library path of the installer (hostPath /home/kubernetes/bin/nvidia and gib, LD_LIBRARY_PATH) is the DRANET Pod's.
        assert mine['spec']['volumes'] == dranet_pod['spec']['volumes'] and mine['spec']['containers'][0]['env'] == dranet_pod['spec']['containers'][0]['env']
    for minor in MINORS['RDMA']:
        for obj in render.nccl_test_objects('RDMA', 'nccl', multi_network=True):
            validate(obj, minor)
    assert render.nccl_test_exec('RDMA')['container'] == 'test'


@pytest.mark.parametrize('kwargs, words', [
    ({'technology': 'TCPXO', 'multi_network': True}, ['multi_network', 'TCPXO']),
    ({'technology': 'RDMA', 'multi_network': True, 'compute_class': 'c'}, ['multi_network', 'compute_class c']),
])
def test_manual_multi_network_test_refusals(kwargs, words):
    with pytest.raises(InputError) as error:
        render.nccl_test_objects(**kwargs)
    for word in words:
        assert word in str(error.value)


@pytest.mark.parametrize('kwargs, words', [
    ({}, ['network_prefix']),
    ({'networks': [{'network': 'g', 'subnetwork': 's'}] * 8}, ['9 additional networks', 'got 8']),
    ({'networks': [{'network': 'g', 'subnetwork': 's'}] + [{'network': 'r%d' % n, 'subnetwork': 's%d' % n} for n in range(8)]},
     ['belong to one other VPC']),
    ({'network_prefix': 'u', 'machine_type': 'a3-megagpu-8g'}, ['machine_type', 'a3-ultragpu-8g']),
])
def test_manual_multi_network_refusals(kwargs, words):
    with pytest.raises(InputError) as error:
        render.rdma_network_objects(**kwargs)
    for word in words:
        assert word in str(error.value)


def test_rdma_installer_differs_from_the_vendor_only_in_node_selection():
    with open(vendored.path('gpudirect-rdma/nccl-rdma-installer.yaml'), encoding='utf-8') as handle:
        vendor = yaml.safe_load(handle)
    assert render.rdma_installer_daemonset() == vendor   # both RDMA accelerators, every pool: the vendor's own selection
    ours = render.rdma_installer_daemonset(node_pool='manual', machine_type='a3-ultragpu-8g')
    expressions = ours['spec']['template']['spec'].pop('affinity')['nodeAffinity']['requiredDuringSchedulingIgnoredDuringExecution'][
        'nodeSelectorTerms'][0]['matchExpressions']
    assert expressions == [{'key': 'cloud.google.com/gke-accelerator', 'operator': 'In', 'values': ['nvidia-h200-141gb']},
                           {'key': 'cloud.google.com/gke-nodepool', 'operator': 'In', 'values': ['manual']}]
    vendor['spec']['template']['spec'].pop('affinity')
    assert ours == vendor
    for minor in MINORS['RDMA']:
        kubernetes_validate.validate(render.rdma_installer_daemonset(node_pool='manual'), minor, strict=True)


@pytest.mark.parametrize('image', ['nginx', 'localhost:5000/team/nccl:v1.2', 'us-docker.pkg.dev/p/r/nccl-plugin:v1.0.15',
                                   'r.example/a/b@sha256:' + 'a' * 64, 'r.example/a/b:v1@sha256:' + 'f' * 64])
def test_image_references_the_kubelet_parses_are_kept(image):
    (installer, _nri) = render.gke_daemonsets('TCPXO', plugin_image=image)
    spec = installer['spec']['template']['spec']
    assert image in [c['image'] for c in spec.get('initContainers', []) + spec['containers']]


@pytest.mark.parametrize('image', ['Bad Image:', 'r.example/UPPER/case:1', 'a:b:c', 'r.example/a@sha256:12', 'a/' + 'b' * 260])
def test_image_references_the_kubelet_refuses_are_refused_by_name(image):
    with pytest.raises(InputError, match=r"^plugin_image: .* is not an image reference the kubelet can pull"):
        render.gke_daemonsets('TCPXO', plugin_image=image)
    with pytest.raises(InputError, match=r"^daemon_image: "):
        workload.gpudirect_workload({'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'p'},
                                     'spec': {'containers': [{'name': 'c', 'image': 'x', 'resources': {'limits': {'nvidia.com/gpu': 8}}}]}},
                                    'TCPXO', daemon_image=image)


def test_an_unknown_technology_is_named_once():
    with pytest.raises(InputError) as raised:
        render.gke_daemonsets('TCPZ')
    assert str(raised.value).startswith("technology: unknown GPUDirect technology 'TCPZ'") and str(raised.value).count('technology:') == 1


@pytest.mark.parametrize('technology,script,variable', [('TCPXO', '/scripts/allgather.sh', 'NCCL_FASTRAK_IFNAME'),
                                                        ('TCPX', '/configs/allgather.sh', 'NCCL_GPUDIRECTTCPX_SOCKET_IFNAME')])
def test_the_diagnosis_has_one_test_pod_per_node_and_restricts_a_run_to_one_nic(technology, script, variable):
    """Issue 26 on GKE: the guide's test Pod once per node, pinned to it, behind its own Service; a run between two of them
    is the guide's script with their Services, and a per-NIC run sets the plugin's NIC list in its environment."""
    nodes = ['node-c', 'node-a', 'node-b']
    found = render.nccl_diagnosis_objects(technology, nodes, 'nccl')
    pods = [obj for obj in found['objects'] if obj['kind'] == 'Pod']
    services = [obj for obj in found['objects'] if obj['kind'] == 'Service']
    assert [p['metadata']['name'] for p in pods] == ['nccl-test-host-1', 'nccl-test-host-2', 'nccl-test-host-3']
    assert [p['spec']['nodeSelector']['kubernetes.io/hostname'] for p in pods] == nodes
    assert [s['spec']['selector'] for s in services] == [{'name': 'nccl-host-%d' % n} for n in (1, 2, 3)]
    assert [p['metadata']['labels']['name'] for p in pods] == ['nccl-host-1', 'nccl-host-2', 'nccl-host-3']
    # hostname: what NCCL's lines in that Pod start with (spec.hostname where the guide's Pods set it, as hostN).
    assert found['hosts']['node-b'] == {'pod': 'nccl-test-host-3', 'service': 'nccl-host-3',
                                        'hostname': pods[2]['spec'].get('hostname') or 'nccl-test-host-3'}
    for obj in found['objects']:
        validate(obj, '1.33')
    assert render.nccl_diagnosis_exec(technology, ['nccl-host-3', 'nccl-host-1'])['command'] == [script, 'nccl-host-3', 'nccl-host-1']
    assert render.nccl_diagnosis_exec(technology, ['nccl-host-2', 'nccl-host-1'], 'eth3')['command'] == [
        'env', '%s=eth3' % variable, script, 'nccl-host-2', 'nccl-host-1']
    with pytest.raises(InputError, match='nic: .eth9. is not a data NIC'):
        render.nccl_diagnosis_exec(technology, ['nccl-host-2', 'nccl-host-1'], 'eth9')
    with pytest.raises(InputError, match='nodes: give the GPU nodes'):
        render.nccl_diagnosis_objects(technology, ['node-a', 'node-a'])
    if technology == 'TCPX':   # the ConfigMap's run-nccl.sh takes the NIC list from its environment, else the guide's
        script_text = next(obj for obj in found['objects'] if obj['kind'] == 'ConfigMap')['data']['run-nccl.sh']
        assert '-x NCCL_GPUDIRECTTCPX_SOCKET_IFNAME="${NCCL_GPUDIRECTTCPX_SOCKET_IFNAME:-eth1,eth2,eth3,eth4}"' in script_text


def test_the_rdma_diagnosis_has_one_test_pod_per_node_and_restricts_a_run_to_one_hca():
    nodes = ['node-a', 'node-c', 'node-b']
    found = render.nccl_diagnosis_objects('RDMA', nodes, 'nccl')
    pods = [obj for obj in found['objects'] if obj['kind'] == 'Pod']
    assert [p['spec']['nodeSelector']['kubernetes.io/hostname'] for p in pods] == nodes
    assert all(p['spec']['resourceClaims'][0]['resourceClaimTemplateName'] == 'all-mrdma' for p in pods)
    # No spec.hostname, no hostNetwork: NCCL's lines start with the Pod's name.
    assert found['hosts']['node-b'] == {'pod': 'nccl-test-host-3', 'service': 'nccl-host-3', 'hostname': 'nccl-test-host-3'}
    for obj in found['objects']:
        validate(obj, '1.33')
    script = '/usr/local/gib/scripts/run_nccl_tests.sh'
    assert render.nccl_diagnosis_exec('RDMA', ['nccl-host-2', 'nccl-host-1'], 'mlx5_3')['command'] == [
        'env', 'NCCL_IB_HCA=mlx5_3', script, '-t', 'all_gather', '-b', '1K', '-e', '8G', 'nccl-host-2', 'nccl-host-1']
    with pytest.raises(InputError, match='nic: .* is not an RDMA device name'):
        render.nccl_diagnosis_exec('RDMA', ['nccl-host-2', 'nccl-host-1'], 'mlx5_3; rm')
    on_class = render.nccl_diagnosis_objects('RDMA', nodes, 'nccl', compute_class='rdma-class')
    assert all(p['spec']['nodeSelector'] == {'cloud.google.com/compute-class': 'rdma-class', 'kubernetes.io/hostname': n}
               for p, n in zip([o for o in on_class['objects'] if o['kind'] == 'Pod'], nodes))

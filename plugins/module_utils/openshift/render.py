# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The openshift_rdma role's objects, rendered from the catalog (catalog/openshift.py) and the role's options.

Pure functions: (options, what was read from the cluster) -> list of API objects as dicts.  ``options``
is the role's input as one dict (``openshift_rdma_options`` in the role)::

    {'method': 'shared_device', 'link': 'roce', 'interface': None, 'vendor': '15b3', 'device_ids': [],
     'pf_names': [], 'node_selector': {}, 'num_vfs': None, 'ipam': {}, 'network_namespace': 'default',
     'mtu': 1500, 'rdma_enabled': False, 'threshold_fraction': 0.75, 'link_gbps': None}

``problems(options, cluster)`` lists every bad input (each names the option and the fix) before anything
is created; the role fails on a non-empty list.
"""

from __future__ import annotations

import base64
import copy
import ipaddress
import json
import re

from ansible.module_utils.common.validation import check_type_float, check_type_int

from ansible_collections.aiinfra.gpudirect.plugins.module_utils import report_dir
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import openshift as catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError

OLM = 'operators.coreos.com/v1alpha1'
NNO = 'mellanox.com/v1alpha1'
SRIOV = 'sriovnetwork.openshift.io/v1'
MCO = 'machineconfiguration.openshift.io/v1'
NETWORKS_ANNOTATION = 'k8s.v1.cni.cncf.io/networks'
_DNS_LABEL = re.compile(r'^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$')
_HEX4 = re.compile(r'^[0-9a-f]{4}$')
_PF_NAME = re.compile(r'^[A-Za-z0-9_.-]+(#\d+-\d+)?$')


def _obj(api_version, kind, name, namespace=None, **fields):
    metadata = {'name': name}
    if namespace:
        metadata['namespace'] = namespace
    metadata.update(fields.pop('metadata', {}))
    return {'apiVersion': api_version, 'kind': kind, 'metadata': metadata, **fields}


def configuration(options):
    """The catalog entry of (method, link); an InputError naming the option when unknown."""
    method, link = options.get('method'), options.get('link')
    if method not in catalog.METHODS:
        raise InputError('openshift_rdma_method=%r is not a method: use one of %s' % (method, ', '.join(catalog.METHODS)))
    if link not in catalog.LINKS:
        raise InputError('openshift_rdma_link=%r is not a link: use one of %s' % (link, ', '.join(catalog.LINKS)))
    return catalog.CONFIGURATIONS[(method, link)]


def ipam(options):
    """The whereabouts IPAM of the method's network: the given range or the configuration's default."""
    conf = configuration(options)
    given = options.get('ipam') or {}
    default = conf['ipam']
    if given.get('range'):
        return {'range': given['range'], 'gateway': given.get('gateway'), 'exclude': list(given.get('exclude') or [])}
    return {'range': default['range'], 'gateway': default['gateway'], 'exclude': list(default['exclude'])}


def ipam_json(options):
    spec = ipam(options)
    body = {'type': 'whereabouts', 'range': spec['range']}
    if spec['exclude']:
        body['exclude'] = spec['exclude']
    if spec['gateway']:
        body['gateway'] = spec['gateway']
    return json.dumps(body, separators=(',', ':'))


def interface(options):
    return options.get('interface') or configuration(options)['interface']


def resource(options):
    """The extended resource a workload Pod requests (rdma/..., nvidia.com/hostdev, openshift.io/...)."""
    conf = configuration(options)
    if conf.get('policy') and options.get('resource_name'):
        return '%s/%s' % (catalog.SRIOV_RESOURCE_PREFIX, options['resource_name'])
    return conf['resource']


def node_selector(options):
    return dict(options.get('node_selector') or {catalog.NODE_LABELS['mellanox']: 'true'})


# checks ------------------------------------------------------------------------------------------
def _network(text, field, problems):
    try:
        return ipaddress.ip_network(text, strict=False)
    except (TypeError, ValueError):
        problems.append('%s=%r is not an IP range: give CIDR notation such as 192.168.2.0/24' % (field, text))
        return None


def _ipam_problems(options, problems):
    given = options.get('ipam') or {}
    if given and not given.get('range'):
        problems.append('openshift_rdma_ipam.range is required when openshift_rdma_ipam is given: add range (CIDR)')
        return
    spec = ipam(options)
    network = _network(spec['range'], 'openshift_rdma_ipam.range', problems)
    if network is None:
        return
    if network.num_addresses < 4:
        problems.append('openshift_rdma_ipam.range=%s holds fewer than 4 addresses: give a /30 or larger' % spec['range'])
    if spec['gateway']:
        try:
            if ipaddress.ip_address(spec['gateway']) not in network:
                problems.append('openshift_rdma_ipam.gateway=%s lies outside openshift_rdma_ipam.range=%s: give an '
                                'address inside the range' % (spec['gateway'], spec['range']))
        except ValueError:
            problems.append('openshift_rdma_ipam.gateway=%r is not an IP address' % spec['gateway'])
    for exclude in spec['exclude']:
        excluded = _network(exclude, 'openshift_rdma_ipam.exclude', problems)
        if excluded is not None and (excluded.version != network.version or not excluded.subnet_of(network)):
            problems.append('openshift_rdma_ipam.exclude entry %s lies outside the range %s: remove it or widen the range'
                            % (exclude, spec['range']))
    for reserved in list(catalog.RESERVED_RANGES) + list(options.get('reserved_ranges') or []):
        other = _network(reserved, 'openshift_rdma_reserved_ranges', problems)
        if other is not None and other.version == network.version and network.overlaps(other):
            problems.append('openshift_rdma_ipam.range=%s overlaps the cluster range %s: choose a disjoint range'
                            % (spec['range'], reserved))


def _nic_problems(options, cluster, problems):
    vendor = str(options.get('vendor') or catalog.OPENSHIFT_RDMA['mellanox_vendor_id'])
    if not _HEX4.match(vendor):
        problems.append('openshift_rdma_nic_vendor=%r is not a PCI vendor ID: give 4 lower-case hex digits (15b3)' % vendor)
    for device in options.get('device_ids') or []:
        if not _HEX4.match(str(device)):
            problems.append('openshift_rdma_nic_device_ids entry %r is not a PCI device ID: give 4 lower-case hex digits '
                            '(a2dc for a ConnectX-7)' % device)
    for name in options.get('pf_names') or []:
        if not _PF_NAME.match(str(name)):
            problems.append('openshift_rdma_nic_pf_names entry %r is not a PF name: give a netdev name, optionally with '
                            'a VF range (ens8f0np0#0-7)' % name)
    if options.get('interface') is not None and not _PF_NAME.match(str(options['interface'])):
        problems.append('openshift_rdma_interface=%r is not a netdev name' % options['interface'])
    if cluster.get('nodes') is not None:
        problems.extend(selector_problems(options, cluster['nodes']))


def selector_problems(options, nodes):
    """The node selector against the nodes read: [] when some node carries every label it asks for. NFD's labels
    (feature.node.kubernetes.io/...) exist only once NFD has run; on nodes that carry none yet, only the selector's
    other labels are judged (the role judges the whole selector again once NFD has labelled the nodes)."""
    selector = node_selector(options)
    labelled = any(key.startswith(catalog.NFD_LABEL_PREFIX) for node in nodes for key in (node['metadata'].get('labels') or {}))
    judged = {key: value for key, value in selector.items() if labelled or not key.startswith(catalog.NFD_LABEL_PREFIX)}
    if not judged or any(all((node['metadata'].get('labels') or {}).get(key) == str(value) for key, value in judged.items())
                         for node in nodes):
        return []
    if judged == selector:
        return ['openshift_rdma_node_selector %s matches none of the %d nodes: check the NIC is installed and NFD labels it, or '
                'change the selector' % (json.dumps(selector, sort_keys=True), len(nodes))]
    return ['openshift_rdma_node_selector %s matches none of the %d nodes (NFD has not labelled them yet, so its labels are '
            'judged later; these are not): label the RDMA nodes or change the selector' % (json.dumps(judged, sort_keys=True), len(nodes))]


def _sriov_problems(options, cluster, problems):
    conf = configuration(options)
    num_vfs = options.get('num_vfs')
    if not conf.get('policy'):
        if num_vfs is not None:
            problems.append('openshift_rdma_num_vfs applies to method sriov_legacy only: remove it for %s' % options['method'])
        return
    if num_vfs is None:
        return
    if not isinstance(num_vfs, int) or isinstance(num_vfs, bool) or num_vfs < 1:
        problems.append('openshift_rdma_num_vfs=%r must be a positive integer' % (num_vfs,))
        return
    limits = [iface.get('totalvfs') for state in cluster.get('node_states') or []
              for iface in (state.get('status') or {}).get('interfaces') or []
              if iface.get('name') == interface(options) and iface.get('totalvfs')]
    if limits and num_vfs > min(limits):
        problems.append('openshift_rdma_num_vfs=%d exceeds the %d VFs that %s supports (SriovNetworkNodeState '
                        'interfaces[].totalvfs): use at most %d' % (num_vfs, min(limits), interface(options), min(limits)))


def _cluster_problems(options, cluster, problems):
    version = cluster.get('version')
    if version:
        low, high = catalog.OPENSHIFT_VERSIONS
        minor = tuple(int(part) for part in version.split('.')[:2])
        if not tuple(map(int, low.split('.'))) <= minor <= tuple(map(int, high.split('.'))):
            problems.append('cluster version %s is outside the range the chapter covers (%s to %s): use a supported '
                            'OpenShift release' % (version, low, high))
    for policy in cluster.get('cluster_policies') or []:
        name = policy['metadata']['name']
        driver = (policy.get('spec') or {}).get('driver') or {}
        if name != catalog.CLUSTER_POLICY_NAME:
            problems.append('ClusterPolicy %s already configures the GPU Operator (only one is reconciled): delete it or '
                            'let the role own %s' % (name, catalog.CLUSTER_POLICY_NAME))
        elif driver.get('useHostMofed') or (driver.get('rdma') or {}).get('useHostMofed'):
            problems.append('ClusterPolicy %s sets driver.rdma.useHostMofed, which conflicts with the Network Operator '
                            'driver: set it false' % name)


# The role's numeric options and how Ansible's argument specs convert them: given on the command line
# (-e openshift_rdma_mtu=9000) they arrive as strings, which the role's argument validation accepts.
NUMERIC_OPTIONS = {'num_vfs': check_type_int, 'mtu': check_type_int, 'threshold_fraction': check_type_float,
                   'link_gbps': check_type_float}


def typed_options(options):
    """``options`` with the numeric ones converted as the role's argument spec types them; a value that is not a number
    stays as given, for problems() to name."""
    typed = dict(options)
    for key, convert in NUMERIC_OPTIONS.items():
        if typed.get(key) not in (None, '') and not isinstance(typed[key], bool):
            try:
                typed[key] = convert(typed[key])
            except (TypeError, ValueError):
                pass
    return typed


def problems(options, cluster=None):
    """Every bad input, each naming the option and the fix (empty when the inputs are good)."""
    cluster = cluster or {}
    found = []
    try:
        configuration(options)
    except InputError as error:
        return [str(error)]
    _ipam_problems(options, found)
    _nic_problems(options, cluster, found)
    _sriov_problems(options, cluster, found)
    _cluster_problems(options, cluster, found)
    namespace = options.get('network_namespace') or catalog.NETWORK_NAMESPACE
    if not _DNS_LABEL.match(str(namespace)):
        found.append('openshift_rdma_network_namespace=%r is not a namespace name (RFC 1123 label)' % namespace)
    elif cluster.get('namespaces') is not None and namespace not in cluster['namespaces']:
        # The operators write the NetworkAttachmentDefinition there; into a missing namespace they never do, and
        # the role's wait for it would run out.
        found.append('openshift_rdma_network_namespace=%r does not exist in the cluster: create it first or give an existing '
                     'namespace (default: %s)' % (namespace, catalog.NETWORK_NAMESPACE))
    unknown = [name for name in options.get('machine_configs') or [] if name not in catalog.MACHINE_CONFIGS]
    if unknown:
        found.append('openshift_rdma_machine_configs: %s %s not one of the chapter\'s MachineConfigs; use %s'
                     % (', '.join(map(repr, unknown)), 'is' if len(unknown) == 1 else 'are', ', '.join(catalog.MACHINE_CONFIGS)))
    if options.get('machine_type'):
        try:
            family = families.get_family(options['machine_type'], field='openshift_rdma_machine_type')
        except InputError as error:
            found.append(str(error))
        else:
            if family.technology != families.RDMA or not family.line_rate_gbps:
                found.append('openshift_rdma_machine_type=%s uses GPUDirect-%s, not RDMA: give an RDMA machine type (%s) or leave it '
                             'out (the link rate is then read from ibstat)' % (
                                 family.machine_type, family.technology,
                                 ', '.join(f.machine_type for f in families.FAMILIES.values() if f.technology == families.RDMA)))
    if options.get('report_dir'):
        problem = report_dir.unwritable(options['report_dir'])
        if problem:
            found.append('openshift_rdma_report_dir: %s' % problem)
    mtu = options.get('mtu', 1500)
    if not isinstance(mtu, int) or not 576 <= mtu <= 9216:
        found.append('openshift_rdma_mtu=%r must be an integer from 576 to 9216' % (mtu,))
    fraction = options.get('threshold_fraction', catalog.PROOF_THRESHOLD_FRACTION)
    if not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
        found.append('openshift_rdma_threshold_fraction=%r must be a number in (0, 1]' % (fraction,))
    link_gbps = options.get('link_gbps')
    if link_gbps is not None and (not isinstance(link_gbps, (int, float)) or link_gbps <= 0):
        found.append('openshift_rdma_link_gbps=%r must be a positive number (Gb/s)' % (link_gbps,))
    return found


# operators ----------------------------------------------------------------------------------------
def operator_objects(operator, channel, csv=None):
    """Namespace, OperatorGroup and Subscription of one catalog operator (catalog.OPERATORS entry)."""
    namespace = operator['namespace']
    # The label gives the role's apply a field of the Namespace to own: an apply that owns no field leaves no
    # managedFields entry, and the teardown knows the role's objects by that entry.
    meta = {'labels': dict(operator['namespace_labels'] or {}, **{'app.kubernetes.io/managed-by': 'aiinfra.gpudirect'})}
    if operator['namespace_annotations']:
        meta['annotations'] = dict(operator['namespace_annotations'])
    spec = {'channel': channel, 'name': operator['package'], 'source': operator['source'],
            'sourceNamespace': catalog.MARKETPLACE_NAMESPACE, 'installPlanApproval': operator['approval']}
    if operator['pin_csv']:
        if not csv:
            raise InputError('%s: no CSV to pin (PackageManifest channel %s has no currentCSV)' % (operator['title'], channel))
        spec['startingCSV'] = csv
    return [_obj('v1', 'Namespace', namespace, metadata=meta),
            _obj('operators.coreos.com/v1', 'OperatorGroup', operator['operator_group'], namespace,
                 spec={'targetNamespaces': [namespace]}),
            _obj(OLM, 'Subscription', operator['subscription'], namespace, spec=spec)]


# cluster configuration ----------------------------------------------------------------------------
def nfd_instance(image):
    nfd = catalog.NFD_INSTANCE
    config = ('core:\n  sleepInterval: %s\nsources:\n  pci:\n    deviceClassWhitelist: [%s]\n    deviceLabelFields: [%s]\n'
              % (nfd['sleep_interval'], ', '.join('"%s"' % c for c in nfd['pci_device_classes']),
                 ', '.join('"%s"' % f for f in nfd['pci_label_fields'])))
    return _obj('nfd.openshift.io/v1', 'NodeFeatureDiscovery', nfd['name'], 'openshift-nfd',
                spec={'instance': '', 'operand': {'image': image, 'servicePort': nfd['service_port']},
                      'prunerOnDelete': False, 'topologyUpdater': False, 'workerConfig': {'configData': config}})


def sriov_operator_config():
    conf = catalog.SRIOV_OPERATOR_CONFIG
    labels = catalog.NODE_LABELS
    return _obj(SRIOV, 'SriovOperatorConfig', conf['name'], 'openshift-sriov-network-operator',
                spec={'enableInjector': conf['enableInjector'], 'enableOperatorWebhook': conf['enableOperatorWebhook'],
                      'logLevel': conf['logLevel'], 'disableDrain': conf['disableDrain'],
                      # §3: the config daemon runs only where NNO's driver container is ready.
                      'configDaemonNodeSelector': {labels['mofed_wait']: 'false', labels['worker']: '',
                                                   labels['mellanox_sriov']: 'true'}})


def _image(part):
    image, repository, version = catalog.NIC_IMAGES[part]
    return {'image': image, 'repository': repository, 'version': version}


def _ofed_driver():
    driver = _image('ofedDriver')
    driver.update({'startupProbe': {'initialDelaySeconds': 10, 'periodSeconds': 20},
                   'livenessProbe': {'initialDelaySeconds': 30, 'periodSeconds': 30},
                   'readinessProbe': {'initialDelaySeconds': 10, 'periodSeconds': 30},
                   'env': [{'name': name, 'value': 'true'} for name in
                           ('UNLOAD_STORAGE_MODULES', 'RESTORE_DRIVER_ON_POD_TERMINATION', 'CREATE_IFNAMES_UDEV')]})
    return driver


def nic_cluster_policy(options):
    """The one NicClusterPolicy of the method (§4): the driver plus the method's device plugin."""
    conf = configuration(options)
    spec = {'ofedDriver': _ofed_driver()}
    vendor = str(options.get('vendor') or catalog.OPENSHIFT_RDMA['mellanox_vendor_id'])
    if 'rdmaSharedDevicePlugin' in conf['nic_parts']:
        selectors = {'ifNames': [interface(options)]}
        if options.get('device_ids'):
            selectors.update({'vendors': [vendor], 'deviceIDs': list(options['device_ids'])})
        config = {'configList': [{'resourceName': conf['resource'].split('/', 1)[1], 'rdmaHcaMax': catalog.RDMA_HCA_MAX,
                                  'selectors': selectors}]}
        spec['rdmaSharedDevicePlugin'] = dict(_image('rdmaSharedDevicePlugin'), config=json.dumps(config, separators=(',', ':')))
    if 'sriovDevicePlugin' in conf['nic_parts']:
        selectors = {'vendors': [vendor], 'isRdma': True}
        if options.get('device_ids'):
            selectors['deviceIDs'] = list(options['device_ids'])
        if options.get('pf_names'):
            selectors['pfNames'] = list(options['pf_names'])
        if conf.get('link_type'):
            selectors['linkTypes'] = [conf['link_type']]
        prefix, name = conf['resource'].split('/', 1)
        config = {'resourceList': [{'resourcePrefix': prefix, 'resourceName': name, 'selectors': selectors}]}
        spec['sriovDevicePlugin'] = dict(_image('sriovDevicePlugin'), config=json.dumps(config, separators=(',', ':')))
    if 'ipoib' in conf['nic_parts']:
        spec['secondaryNetwork'] = {'ipoib': _image('ipoib')}
    return _obj(NNO, 'NicClusterPolicy', catalog.NIC_CLUSTER_POLICY_NAME, spec=spec)


def cluster_policy(sample, rdma_enabled=False):
    """The GPU Operator's ClusterPolicy: the CSV's alm-examples sample with the chapter's RDMA settings (§5)."""
    spec = copy.deepcopy((sample or {}).get('spec') or {})
    driver = spec.setdefault('driver', {})
    driver.update({'enabled': True, 'useOpenKernelModules': True, 'useNvidiaDriverCRD': False})
    driver['rdma'] = {'enabled': bool(rdma_enabled), 'useHostMofed': False}
    spec['gdrcopy'] = dict(spec.get('gdrcopy') or {}, enabled=True)
    spec['operator'] = dict(spec.get('operator') or {}, defaultRuntime='crio', runtimeClass='nvidia', use_ocp_driver_toolkit=True)
    return _obj('nvidia.com/v1', 'ClusterPolicy', catalog.CLUSTER_POLICY_NAME, spec=spec)


def machine_configs(names, udev_rules=''):
    """The chapter's MachineConfigs (§8) named in ``names`` (keys of catalog.MACHINE_CONFIGS)."""
    objects = []
    labels = {catalog.MACHINE_CONFIG_ROLE_LABEL: 'worker'}
    for key in names:
        if key not in catalog.MACHINE_CONFIGS:
            raise InputError('openshift_rdma_machine_configs entry %r is unknown: use %s'
                             % (key, ', '.join(catalog.MACHINE_CONFIGS)))
        entry = catalog.MACHINE_CONFIGS[key]
        if 'kernel_arguments' in entry:
            spec = {'kernelArguments': list(entry['kernel_arguments'])}
        else:
            contents = entry.get('contents') or udev_rules
            if not contents:
                raise InputError('openshift_rdma_udev_rules is required for machine config %s: give the rules, one per port' % key)
            source = 'data:text/plain;base64,' + base64.b64encode(contents.encode()).decode()
            spec = {'config': {'ignition': {'version': catalog.IGNITION_VERSION},
                               'storage': {'files': [{'path': entry['path'], 'mode': 420, 'overwrite': True,
                                                      'contents': {'source': source}}]}}}
        objects.append(_obj(MCO, 'MachineConfig', entry['name'], metadata={'labels': labels}, spec=spec))
    return objects


# the method's networks ---------------------------------------------------------------------------
def method_objects(options):
    """The method's objects after the NicClusterPolicy: an SR-IOV policy where the method needs one, then the
    network whose NetworkAttachmentDefinition the Pods name."""
    conf = configuration(options)
    namespace = options.get('network_namespace') or catalog.NETWORK_NAMESPACE
    name = conf['network_name']
    objects = []
    if conf.get('policy'):
        policy = conf['policy']
        nic = {'vendor': str(options.get('vendor') or catalog.OPENSHIFT_RDMA['mellanox_vendor_id']),
               'pfNames': list(options.get('pf_names') or ['%s#0-%d' % (interface(options), (options.get('num_vfs') or policy['numVfs']) - 1)])}
        if options.get('device_ids'):
            nic['deviceID'] = options['device_ids'][0]
        spec = {'deviceType': 'netdevice', 'isRdma': True, 'mtu': options.get('mtu', policy['mtu']), 'nicSelector': nic,
                'nodeSelector': node_selector(options), 'numVfs': options.get('num_vfs') or policy['numVfs'],
                'priority': policy['priority'], 'resourceName': options.get('resource_name') or policy['resourceName']}
        if policy['linkType']:
            spec['linkType'] = policy['linkType']
        objects.append(_obj(SRIOV, 'SriovNetworkNodePolicy', policy['name'], 'openshift-sriov-network-operator', spec=spec))
        network_spec = {'networkNamespace': namespace, 'resourceName': spec['resourceName'], 'ipam': ipam_json(options)}
        if conf['network_kind'] == 'SriovNetwork':
            network_spec['vlan'] = 0
        else:
            network_spec['linkState'] = 'enable'
        objects.append(_obj(SRIOV, conf['network_kind'], name, 'openshift-sriov-network-operator', spec=network_spec))
        return objects
    spec = {'networkNamespace': namespace, 'ipam': ipam_json(options)}
    if conf['network_kind'] == 'MacvlanNetwork':
        spec.update({'master': interface(options), 'mode': 'bridge', 'mtu': options.get('mtu', 1500)})
    elif conf['network_kind'] == 'IPoIBNetwork':
        spec['master'] = interface(options)
    else:
        spec['resourceName'] = conf['resource'].split('/', 1)[1]
    objects.append(_obj(NNO, conf['network_kind'], name, spec=spec))
    return objects


def method_refs(options):
    """(apiVersion, kind, name, namespace) of everything the method owns: the NicClusterPolicy aside."""
    return [(o['apiVersion'], o['kind'], o['metadata']['name'], o['metadata'].get('namespace')) for o in method_objects(options)]


def every_method_object(options):
    """Every object any of the six configurations creates (the NicClusterPolicy aside), as references."""
    refs = []
    for method, link in catalog.CONFIGURATIONS:
        for ref in method_refs(dict(options, method=method, link=link, ipam={}, num_vfs=None, resource_name=None, pf_names=[])):
            if ref not in refs:
                refs.append(ref)
    return [{'apiVersion': a, 'kind': k, 'name': n, 'namespace': ns} for a, k, n, ns in refs]


def stale_objects(options):
    """Objects another configuration creates and this one does not: removed when switching methods
    (the NicClusterPolicy is one per cluster and is replaced, not removed)."""
    keep = set(method_refs(options))
    return [ref for ref in every_method_object(options)
            if (ref['apiVersion'], ref['kind'], ref['name'], ref['namespace']) not in keep]


# workloads and the proof ---------------------------------------------------------------------------
def rdma_workload(pod, options, gpus=1):
    """A Pod (or a Job/Deployment's template) given the method's network annotation, RDMA and GPU requests
    and IPC_LOCK on every container."""
    pod = copy.deepcopy(pod)
    holder = pod
    if pod.get('kind') in ('Job', 'Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet'):
        holder = pod['spec']['template']
    elif pod.get('kind') == 'CronJob':
        holder = pod['spec']['jobTemplate']['spec']['template']
    metadata = holder.setdefault('metadata', {})
    annotations = metadata.setdefault('annotations', {})
    network = configuration(options)['network_name']
    present = [n.strip() for n in annotations.get(NETWORKS_ANNOTATION, '').split(',') if n.strip()]
    if network not in present:
        present.append(network)
    annotations[NETWORKS_ANNOTATION] = ','.join(present)
    amounts = {'nvidia.com/gpu': gpus, resource(options): 1}
    for container in holder['spec']['containers']:
        resources = container.setdefault('resources', {})
        for key in ('limits', 'requests'):
            resources.setdefault(key, {}).update(amounts)
        capabilities = container.setdefault('securityContext', {}).setdefault('capabilities', {})
        added = capabilities.setdefault('add', [])
        if 'IPC_LOCK' not in added:
            added.append('IPC_LOCK')
    return pod


def test_pods(options, nodes, namespace=None):
    """The chapter's two test Pods, one per node (§9): server on nodes[0], client on nodes[1]."""
    if len(nodes or []) < 2:
        raise InputError('the ib_write_bw proof needs two nodes that the selector matches; found %d' % len(nodes or []))
    namespace = namespace or options.get('network_namespace') or catalog.NETWORK_NAMESPACE
    pods = []
    for role, node in zip(('server', 'client'), nodes[:2]):
        name = 'rdma-%s-%s-%s' % (options['method'].replace('_', '-'), options['link'], role)
        pod = _obj('v1', 'Pod', name, namespace, metadata={'labels': {'app.kubernetes.io/name': 'rdma-workload',
                                                                      'app.kubernetes.io/component': role}},
                   spec={'nodeSelector': {'kubernetes.io/hostname': node}, 'restartPolicy': 'Never',
                         'containers': [{'name': 'rdma-workload', 'image': catalog.TEST_POD_IMAGE}]})
        pods.append(rdma_workload(pod, options))
    return pods


def ib_write_bw_command(device, source_ip, server_ip=None, gpu=0, port=None, rdma_cm=True):
    """§10's command line: the server form, or the client form with the server's address last.

    ``rdma_cm=False`` (the diagnosis's per-HCA runs): perftest's other connection form, the queue pairs exchanged over a
    TCP socket to ``server_ip`` and the RDMA traffic on device ``device`` (GID index -x): rdma_cm (-R, --source_ip) would
    take the device that owns the source address, net1's, whatever -d says."""
    flags = list(catalog.IB_WRITE_BW_FLAGS)
    if not rdma_cm:
        flags.remove('-R')
    command = [catalog.IB_WRITE_BW, *flags, '-d', device, '-p', str(port or catalog.IB_WRITE_BW_PORT)]
    if rdma_cm:
        command += ['--source_ip', source_ip]
    command += ['--use_cuda=%d' % gpu, '--use_cuda_dmabuf']
    if server_ip:
        command.append(server_ip)
    return command


def diagnosis_pods(options, nodes, gpus=1, namespace=None):
    """One test Pod per node for the fabric diagnosis (the §9 test Pod with ``gpus`` GPUs, one per HCA run at once, and
    the method's resource), named
    ``rdma-METHOD-LINK-diag-N`` in the order of ``nodes`` and labelled with its node."""
    if len(nodes or []) < 2:
        raise InputError('openshift_rdma_proof_mode: diagnose tests pairs of nodes; the selector matches %d node(s) that offer '
                         'the method\'s resource, give a cluster with at least two' % len(nodes or []))
    namespace = namespace or options.get('network_namespace') or catalog.NETWORK_NAMESPACE
    prefix = diagnosis_pod_prefix(options)
    pods = []
    for index, node in enumerate(nodes):
        pod = _obj('v1', 'Pod', '%s%d' % (prefix, index), namespace,
                   metadata={'labels': {'app.kubernetes.io/name': 'rdma-workload', 'app.kubernetes.io/component': 'diagnosis'}},
                   spec={'nodeSelector': {'kubernetes.io/hostname': node}, 'restartPolicy': 'Never',
                         'containers': [{'name': 'rdma-workload', 'image': catalog.TEST_POD_IMAGE}]})
        pods.append(rdma_workload(pod, options, gpus=int(gpus)))
    return pods


def diagnosis_processes(runs, hcas, gpus, nodes, round_number):
    """The ib_write_bw processes of a diagnosis round, one per run and HCA (a pair of nodes runs every HCA at once, a
    per-HCA run its one): ``{'run', 'hosts', 'hca', 'port', 'gpu', 'client', 'server'}``, client and server the indices
    of the run's nodes in ``nodes``; HCA I uses GPU I (modulo ``gpus``) and port 10000 + round x 100 + I, so no process
    of an earlier round holds it."""
    processes = []
    for index, run in enumerate(runs):
        for hca in [run['nic']] if run.get('nic') else hcas:
            position = list(hcas).index(hca)
            processes.append({'run': index, 'hosts': list(run['hosts']), 'hca': hca, 'gpu': position % max(int(gpus), 1),
                              'port': catalog.IB_WRITE_BW_PORT + int(round_number) * 100 + position,
                              'client': nodes.index(run['hosts'][0]), 'server': nodes.index(run['hosts'][1])})
    return processes


def diagnosis_pod_prefix(options):
    return 'rdma-%s-%s-diag-' % (options['method'].replace('_', '-'), options['link'])


def network_ip(pod, network=None):
    """The Pod's secondary-network address from Multus's network-status annotation (net1 by default)."""
    text = ((pod.get('metadata') or {}).get('annotations') or {}).get('k8s.v1.cni.cncf.io/network-status')
    if not text:
        raise InputError('Pod %s has no k8s.v1.cni.cncf.io/network-status annotation: the network did not attach'
                         % pod['metadata']['name'])
    for entry in json.loads(text):
        if entry.get('interface') == 'net1' or (network and entry.get('name', '').endswith('/' + network)):
            return entry['ips'][0]
    raise InputError('Pod %s has no net1 in its network-status' % pod['metadata']['name'])
